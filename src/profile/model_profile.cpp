#include "tailor/profile/model_profile.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "tailor/core/error.h"
#include "tailor/core/json.h"
#include "tailor/io/atomic_file.h"

namespace tailor {
namespace {

using Json = nlohmann::json;

/// Field access with errors that name the file and the JSON location.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(path_, where.empty() ? what : where + ": " + what);
  }

  const Json& field(const Json& obj, const std::string& where, const char* key) const {
    if (!obj.is_object()) fail(where, "expected a JSON object");
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where, std::string("missing field \"") + key + "\"");
    return *it;
  }

  std::string string(const Json& obj, const std::string& where, const char* key) const {
    const Json& v = field(obj, where, key);
    if (!v.is_string()) fail(where, std::string("\"") + key + "\" must be a string");
    return v.get<std::string>();
  }

  int64_t count(const Json& v, const std::string& where, const char* key) const {
    if (!v.is_number_integer()) fail(where, std::string("\"") + key + "\" must be an integer");
    const int64_t n =
        v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? -1 : v.get<int64_t>();
    if (n < 0) fail(where, std::string("\"") + key + "\" must be ≥ 0, found " + v.dump());
    return n;
  }

  int64_t count(const Json& obj, const std::string& where, const char* key, bool required) const {
    if (!required && (!obj.is_object() || !obj.contains(key))) return 0;
    return count(field(obj, where, key), where, key);
  }

  double error_value(const Json& v, const std::string& where, const char* key) const {
    if (!v.is_number()) fail(where, std::string("\"") + key + "\" must be a number");
    const double e = v.get<double>();
    if (!std::isfinite(e) || e < 0)
      fail(where, std::string("\"") + key + "\" must be finite and ≥ 0, found " + v.dump());
    return e;
  }

 private:
  std::string path_;
};

Candidate read_candidate(const Reader& r, const Json& j, const std::string& where) {
  Candidate c;
  c.label = r.string(j, where, "label");
  if (c.label.empty()) r.fail(where, "empty \"label\"");
  c.rel_error = r.error_value(r.field(j, where, "rel_error"), where, "rel_error");
  c.bytes = r.count(j, where, "bytes", true);
  c.macs = r.count(j, where, "macs", true);
  c.params = r.count(j, where, "params", false);
  if (j.contains("encode_seconds"))
    c.encode_seconds = r.error_value(j["encode_seconds"], where, "encode_seconds");
  if (j.contains("rel_error_activation"))
    c.rel_error_activation =
        r.error_value(j["rel_error_activation"], where, "rel_error_activation");
  if (j.contains("output_damage"))
    c.output_damage = r.error_value(j["output_damage"], where, "output_damage");
  if (j.contains("output_damage_fitted")) {
    if (!j["output_damage_fitted"].is_boolean() || !c.output_damage)
      r.fail(where, "\"output_damage_fitted\" must be a boolean beside \"output_damage\"");
    c.output_damage_fitted = j["output_damage_fitted"].get<bool>();
  }
  if (j.contains("latency_ms")) c.latency_ms = r.error_value(j["latency_ms"], where, "latency_ms");
  return c;
}

LayerProfile read_layer(const Reader& r, const Json& j, const std::string& index_where) {
  LayerProfile l;
  l.name = r.string(j, index_where, "name");
  if (l.name.empty()) r.fail(index_where, "empty \"name\"");
  const std::string where = index_where + " (\"" + l.name + "\")";
  const Json& shape = r.field(j, where, "shape_out_in");
  if (!shape.is_array() || shape.size() != 2)
    r.fail(where, "\"shape_out_in\" must be [out, in], found " + shape.dump());
  for (const Json& d : shape) l.shape_out_in.push_back(r.count(d, where, "shape_out_in"));
  l.numel = r.count(j, where, "numel", true);
  l.dense_bytes = r.count(j, where, "dense_bytes", true);
  int64_t product = 0;
  if (__builtin_mul_overflow(l.shape_out_in[0], l.shape_out_in[1], &product) || product != l.numel)
    r.fail(where, "\"shape_out_in\" " + shape.dump() +
                      " does not hold \"numel\" = " + std::to_string(l.numel) + " elements");
  // Byte convention (docs/formats.md): every weight counts 4·numel bytes.
  if (l.numel > INT64_MAX / 4 || l.dense_bytes != 4 * l.numel)
    r.fail(where, "\"dense_bytes\" = " + std::to_string(l.dense_bytes) +
                      " is not 4 · numel = 4 · " + std::to_string(l.numel));
  const Json& cands = r.field(j, where, "candidates");
  if (!cands.is_array()) r.fail(where, "\"candidates\" must be an array");
  if (cands.empty()) r.fail(where, "empty \"candidates\": every layer needs at least one");
  std::set<std::string> labels;
  for (size_t k = 0; k < cands.size(); ++k) {
    Candidate c = read_candidate(r, cands[k], where + ".candidates[" + std::to_string(k) + "]");
    if (!labels.insert(c.label).second)
      r.fail(where, "duplicate candidate label \"" + c.label + "\"");
    l.candidates.push_back(std::move(c));
  }
  if (j.contains("kept_dense")) l.kept_dense = r.string(j, where, "kept_dense");
  if (j.contains("notes")) {
    const Json& notes = j["notes"];
    if (!notes.is_array()) r.fail(where, "\"notes\" must be an array of strings");
    for (const Json& n : notes) {
      if (!n.is_string()) r.fail(where, "\"notes\" must be an array of strings");
      l.notes.push_back(n.get<std::string>());
    }
  }
  if (j.contains("damage_fits")) {
    const Json& fits = j["damage_fits"];
    if (!fits.is_array()) r.fail(where, "\"damage_fits\" must be an array");
    for (size_t k = 0; k < fits.size(); ++k) {
      const std::string at = where + ".damage_fits[" + std::to_string(k) + "]";
      DamageFit f;
      f.family = r.string(fits[k], at, "family");
      f.alpha = r.error_value(r.field(fits[k], at, "alpha"), at, "alpha");
      f.fit_factor = r.error_value(r.field(fits[k], at, "fit_factor"), at, "fit_factor");
      const Json& probes = r.field(fits[k], at, "probes");
      if (!probes.is_array()) r.fail(at, "\"probes\" must be an array of labels");
      for (const Json& p : probes) {
        if (!p.is_string() || !labels.count(p.get<std::string>()))
          r.fail(at, "\"probes\" must name candidates of the layer");
        f.probes.push_back(p.get<std::string>());
      }
      l.damage_fits.push_back(std::move(f));
    }
  }
  return l;
}

}  // namespace

ModelProfile read_profile(const std::string& path) {
  return parse_profile(read_file(path), path);
}

ModelProfile parse_profile(const std::string& text, const std::string& path) {
  Json j;
  try {
    j = parse_json_unique_keys(text, path);
  } catch (const Json::parse_error& e) {
    throw Error(path, std::string("not valid JSON: ") + e.what());
  }
  if (j.is_object() && j.contains("format") && j["format"] == "tailor-profile-shard")
    throw Error(path,
                "a profile shard (tailor profile --shard), not a profile: merge the shards "
                "with tailor profile-merge SHARD... -o profile.json");
  const Reader r(path);
  ModelProfile p;
  p.model = r.string(j, "", "model");
  p.dense_bytes = r.count(j, "", "dense_bytes", true);
  p.fixed_bytes = r.count(j, "", "fixed_bytes", true);
  if (j.contains("output_metric")) p.output_metric = r.string(j, "", "output_metric");
  if (j.contains("calibration")) p.calibration = r.string(j, "", "calibration");
  if (j.contains("latency_rest_ms"))
    p.latency_rest_ms = r.error_value(j["latency_rest_ms"], "", "latency_rest_ms");
  if (j.contains("latency_model_ms"))
    p.latency_model_ms = r.error_value(j["latency_model_ms"], "", "latency_model_ms");
  if (j.contains("latency_input")) p.latency_input = r.string(j, "", "latency_input");
  const Json& layers = r.field(j, "", "layers");
  if (!layers.is_array()) r.fail("", "\"layers\" must be an array");
  std::set<std::string> names;
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerProfile l = read_layer(r, layers[i], "layers[" + std::to_string(i) + "]");
    if (!names.insert(l.name).second)
      r.fail("layers[" + std::to_string(i) + "]", "duplicate layer name \"" + l.name + "\"");
    p.layers.push_back(std::move(l));
  }
  // dense_bytes covers every weight: the fixed ones and every profiled layer.
  int64_t parts = p.fixed_bytes;
  for (const LayerProfile& l : p.layers)
    if (__builtin_add_overflow(parts, l.dense_bytes, &parts)) parts = INT64_MAX;
  if (p.dense_bytes < parts)
    r.fail("",
           "\"dense_bytes\" = " + std::to_string(p.dense_bytes) +
               " is less than fixed_bytes + the layers' dense_bytes = " + std::to_string(parts));
  return p;
}

std::string profile_to_json(const ModelProfile& profile) {
  using OJson = nlohmann::ordered_json;
  OJson layers = OJson::array();
  for (const LayerProfile& l : profile.layers) {
    OJson cands = OJson::array();
    for (const Candidate& c : l.candidates) {
      // No encode_seconds: wall-clock time goes to the log, never to the
      // artifact (the same inputs give the same bytes on any thread count).
      OJson cj = {{"label", c.label},
                  {"rel_error", c.rel_error},
                  {"bytes", c.bytes},
                  {"macs", c.macs},
                  {"params", c.params}};
      if (c.rel_error_activation) cj["rel_error_activation"] = *c.rel_error_activation;
      if (c.output_damage) cj["output_damage"] = *c.output_damage;
      if (c.output_damage && c.output_damage_fitted) cj["output_damage_fitted"] = true;
      if (c.latency_ms) cj["latency_ms"] = *c.latency_ms;
      cands.push_back(std::move(cj));
    }
    OJson lj = {{"name", l.name},
                {"shape_out_in", l.shape_out_in},
                {"numel", l.numel},
                {"dense_bytes", l.dense_bytes},
                {"candidates", std::move(cands)}};
    if (!l.kept_dense.empty()) lj["kept_dense"] = l.kept_dense;
    if (!l.notes.empty()) lj["notes"] = l.notes;
    if (!l.damage_fits.empty()) {
      OJson fits = OJson::array();
      for (const DamageFit& f : l.damage_fits)
        fits.push_back({{"family", f.family},
                        {"alpha", f.alpha},
                        {"probes", f.probes},
                        {"fit_factor", f.fit_factor}});
      lj["damage_fits"] = std::move(fits);
    }
    layers.push_back(std::move(lj));
  }
  OJson out = {{"model", profile.model},
               {"dense_bytes", profile.dense_bytes},
               {"fixed_bytes", profile.fixed_bytes}};
  if (!profile.output_metric.empty()) {
    out["output_metric"] = profile.output_metric;
    out["calibration"] = profile.calibration;
  }
  if (profile.latency_rest_ms) out["latency_rest_ms"] = *profile.latency_rest_ms;
  if (profile.latency_model_ms) out["latency_model_ms"] = *profile.latency_model_ms;
  if (!profile.latency_input.empty()) out["latency_input"] = profile.latency_input;
  out["layers"] = std::move(layers);
  return out.dump(2) + "\n";
}

void write_profile(const std::string& path, const ModelProfile& profile) {
  write_file_atomic(path, profile_to_json(profile));
}

}  // namespace tailor
