#include "tailor/profile/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>

#include "json_entry.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/atomic_file.h"
#include "tailor/profile/profile_cache.h"
#include "tailor/profile/shard_mpi.h"

namespace tailor {
namespace {

using OJson = nlohmann::ordered_json;

constexpr const char* kShardFormat = "tailor-profile-shard";
constexpr int kShardVersion = 1;

}  // namespace

double layer_cost(int64_t out, int64_t in) {
  return double(out) * double(in) * (64.0 + double(std::min(out, in)));
}

std::vector<PlannedLayer> plan_layers(const graph::Model& model, const ProfileOptions& options) {
  try {
    std::regex check(options.layer_regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("--layers", fmt::format("invalid regex \"{}\": {}", options.layer_regex, e.what()));
  }
  std::vector<PlannedLayer> out;
  for (const graph::WeightView& w : graph::weights(model)) {
    if (!is_profiled(w, options)) continue;
    const Shape s = w.out_in_shape();
    out.push_back({w.name, s[0], s[1], layer_cost(s[0], s[1])});
  }
  return out;
}

std::vector<int> shard_layers(const std::vector<PlannedLayer>& layers, int shards) {
  if (shards < 1) throw Error("--shard", fmt::format("need at least one shard, found {}", shards));
  std::vector<size_t> order(layers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return layers[a].cost > layers[b].cost; });
  std::vector<double> load(shards, 0.0);
  std::vector<int> owner(layers.size(), 0);
  for (size_t i : order) {
    const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = s;
    load[s] += layers[i].cost;
  }
  return owner;
}

std::vector<size_t> layers_of_shard(const std::vector<int>& owner, int shard) {
  std::vector<size_t> out;
  for (size_t i = 0; i < owner.size(); ++i)
    if (owner[i] == shard) out.push_back(i);
  return out;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const std::regex form(R"(^(\d{1,6})/(\d{1,6})$)");
  std::smatch m;
  const int i = std::regex_match(text, m, form) ? std::stoi(m[1].str()) : 0;
  const int n = m.empty() ? 0 : std::stoi(m[2].str());
  if (n < 1 || i >= n)
    throw Error("--shard", fmt::format("expected I/N with 0 ≤ I < N, found \"{}\"", text));
  return {i, n};
}

void write_shard(const std::string& path, const ProfileShard& shard) {
  const OJson j = {{"format", kShardFormat},
                   {"version", kShardVersion},
                   {"shard", shard.index},
                   {"shards", shard.count},
                   {"key", shard.key},
                   {"layers", shard.layers},
                   {"profile", OJson::parse(profile_to_json(shard.part))}};
  write_file_atomic(path, j.dump(1) + "\n");
}

ProfileShard read_shard(const std::string& path) {
  const detail::JsonEntry j(read_file(path), path, "tailor profile shard");
  j.check_format(kShardFormat, kShardVersion);
  ProfileShard s;
  const OJson &index = j.field("shard"), &count = j.field("shards"), &key = j.field("key"),
              &layers = j.field("layers");
  if (!index.is_number_integer() || !count.is_number_integer() || !key.is_string() ||
      !layers.is_array())
    throw Error(path,
                "\"shard\" and \"shards\" must be integers, \"key\" a string and "
                "\"layers\" an array");
  s.index = index.get<int>();
  s.count = count.get<int>();
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw Error(path, fmt::format("shard {}/{} is not I/N with 0 ≤ I < N", s.index, s.count));
  s.key = key.get<std::string>();
  for (const OJson& name : layers) {
    if (!name.is_string()) throw Error(path, "\"layers\" must hold layer names");
    s.layers.push_back(name.get<std::string>());
  }
  s.part = parse_profile(j.field("profile").dump(), path);
  return s;
}

ModelProfile merge_shards(const std::vector<ProfileShard>& shards,
                          const std::vector<std::string>& paths) {
  if (shards.empty() || shards.size() != paths.size())
    throw Error("profile-merge", "no shard files given");
  const ProfileShard& first = shards.front();
  std::vector<int> seen(first.count, -1);
  std::map<std::string, const LayerProfile*> found;
  for (size_t k = 0; k < shards.size(); ++k) {
    const ProfileShard& s = shards[k];
    const std::string& path = paths[k];
    if (s.key != first.key)
      throw Error(path, fmt::format("profiled from another model or with other settings than {} "
                                    "(key {} vs {})",
                                    paths[0], s.key.substr(0, 12), first.key.substr(0, 12)));
    if (s.count != first.count)
      throw Error(path, fmt::format("is shard {}/{}, but {} is of {} shards", s.index, s.count,
                                    paths[0], first.count));
    if (s.layers != first.layers || s.part.dense_bytes != first.part.dense_bytes ||
        s.part.fixed_bytes != first.part.fixed_bytes)
      throw Error(path, fmt::format("lists other layers than {}", paths[0]));
    if (seen[s.index] >= 0)
      throw Error(path, fmt::format("shard {}/{} is given twice (also {})", s.index, s.count,
                                    paths[seen[s.index]]));
    seen[s.index] = static_cast<int>(k);
    for (const LayerProfile& l : s.part.layers) {
      if (std::find(s.layers.begin(), s.layers.end(), l.name) == s.layers.end())
        throw Error(path, fmt::format("holds layer \"{}\", not one of the model's", l.name));
      if (!found.emplace(l.name, &l).second)
        throw Error(path, fmt::format("holds layer \"{}\", which another shard holds too", l.name));
    }
  }
  for (int i = 0; i < first.count; ++i)
    if (seen[i] < 0)
      throw Error(paths[0],
                  fmt::format("shard {}/{} is missing from the files given", i, first.count));
  ModelProfile out;
  out.model = first.part.model;
  out.dense_bytes = first.part.dense_bytes;
  out.fixed_bytes = first.part.fixed_bytes;
  out.output_metric = first.part.output_metric;
  out.calibration = first.part.calibration;
  for (const std::string& name : first.layers) {
    const auto it = found.find(name);
    if (it == found.end())
      throw Error(paths[0], fmt::format("no shard holds layer \"{}\" (a shard file is "
                                        "incomplete)",
                                        name));
    out.layers.push_back(*it->second);
  }
  return out;
}

LayerSelection cached_selection(std::optional<std::vector<size_t>> only,
                                const std::string& settings_key,
                                std::shared_ptr<std::atomic<size_t>> reused) {
  LayerSelection sel;
  sel.only = std::move(only);
  sel.lookup = [settings_key, reused](size_t index, const graph::WeightView& w) {
    std::optional<LayerProfile> hit = load_cached_layer(layer_cache_key(settings_key, index, w));
    if (hit && reused) ++*reused;
    return hit;
  };
  sel.done = [settings_key](size_t index, const graph::WeightView& w, const LayerProfile& l) {
    store_cached_layer(layer_cache_key(settings_key, index, w), l);
  };
  return sel;
}

std::optional<ModelProfile> profile_model_world(
    const graph::Model& model, const ProfileOptions& options, const mpi::World& world, bool cache,
    const std::function<void(ModelProfile&, const std::vector<size_t>&)>& finish) {
  // Rank 0 deals the layers out; every rank checks its model lists the same.
  std::string plan_text;
  const std::vector<PlannedLayer> layers = plan_layers(model, options);
  if (world.rank() == 0) {
    OJson names = OJson::array();
    for (const PlannedLayer& l : layers) names.push_back(l.name);
    plan_text = OJson{{"layers", names}, {"owner", shard_layers(layers, world.size())}}.dump();
  }
  const OJson plan = OJson::parse(world.broadcast(plan_text));
  OJson reply;
  ModelProfile own;
  // Layers this rank measured and stored in the cache (whatever happens next).
  const auto stored = std::make_shared<std::atomic<size_t>>(0);
  try {
    std::vector<std::string> names;
    for (const PlannedLayer& l : layers) names.push_back(l.name);
    if (plan["layers"].get<std::vector<std::string>>() != names)
      throw Error(model.source, fmt::format("lists {} layers to profile, rank 0's model {}: the "
                                            "ranks read different models",
                                            names.size(), plan["layers"].size()));
    const std::vector<size_t> mine =
        layers_of_shard(plan["owner"].get<std::vector<int>>(), world.rank());
    const auto hits = std::make_shared<std::atomic<size_t>>(0);
    LayerSelection sel;
    if (cache) {
      sel = cached_selection(mine, profile_settings_key(options), hits);
      sel.done = [store = sel.done, stored](size_t i, const graph::WeightView& w,
                                            const LayerProfile& l) {
        store(i, w, l);
        ++*stored;
      };
    } else {
      sel.only = mine;
    }
    own = profile_model(model, options, sel);
    if (finish) finish(own, mine);
    reply = {{"profile", OJson::parse(profile_to_json(own))}, {"cached", hits->load()}};
  } catch (const std::exception& e) {
    reply = {{"error", e.what()}};
  }
  reply["stored"] = stored->load();
  const std::vector<std::string> parts = world.gather(reply.dump());
  if (world.rank() != 0) return std::nullopt;
  std::vector<OJson> replies;
  size_t finished = 0;
  for (const std::string& p : parts) {
    replies.push_back(OJson::parse(p));
    finished += replies.back()["stored"].get<size_t>();
  }
  std::map<std::string, LayerProfile> found;
  ModelProfile whole;
  for (size_t r = 0; r < replies.size(); ++r) {
    const OJson& j = replies[r];
    // Only layers measured before the error are worth a rerun's time: an
    // error met before any (an unknown scheme, a bad model) gets no such hint.
    if (j.contains("error"))
      throw Error(fmt::format("rank {}", r),
                  j["error"].get<std::string>() +
                      (finished ? fmt::format("; the {} layer{} finished {} kept in the profile "
                                              "cache, so a rerun profiles only the rest",
                                              finished, finished == 1 ? "" : "s",
                                              finished == 1 ? "is" : "are")
                                : ""));
    // Rank 0's own layers as measured (with their encode_seconds); the others'
    // through JSON, which gives back every double exactly (shortest round trip).
    ModelProfile part =
        r == 0 ? own : parse_profile(j["profile"].dump(), fmt::format("rank {}", r));
    if (r == 0) whole = part;
    for (LayerProfile& l : part.layers) found.emplace(l.name, std::move(l));
  }
  whole.layers.clear();
  for (const PlannedLayer& l : layers) {
    const auto it = found.find(l.name);
    if (it == found.end())
      throw Error(model.source, fmt::format("no rank returned layer \"{}\"", l.name));
    whole.layers.push_back(std::move(it->second));
  }
  return whole;
}

}  // namespace tailor
