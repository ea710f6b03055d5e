#include "tailor/profile/profile_cache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "json_entry.h"
#include "tailor/core/error.h"
#include "tailor/core/text.h"
#include "tailor/core/warning.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/sha256.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor {
namespace {

namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;

constexpr const char* kFormat = "tailor-profile-cache";
constexpr const char* kLayerFormat = "tailor-profile-layer-cache";

void check_key(const std::string& key) {
  const bool ok = key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                  });
  if (!ok)
    throw Error("profile cache",
                "key must be 64 lower-case hex digits, found \"" + escape_control(key, 80) + "\"");
}

std::string entry_path(const std::string& key) {
  check_key(key);
  return (fs::path(profile_cache_dir()) / (key + ".json")).string();
}

/// SHA-256 of a model: of the file, or of a folder's regular files by name.
std::string model_digest(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return sha256_file(path);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(path, ec))
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  if (ec) throw Error(path, "cannot list the folder: " + ec.message());
  std::sort(names.begin(), names.end());
  OJson files = OJson::array();
  for (const std::string& name : names)
    files.push_back({name, sha256_file((fs::path(path) / name).string())});
  return sha256_hex(files.dump());
}

}  // namespace

std::string profile_cache_dir() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : std::string();
  };
  if (const std::string d = env("TAILOR_CACHE_DIR"); !d.empty())
    return (fs::path(d) / "profiles").string();
  if (const std::string d = env("XDG_CACHE_HOME"); !d.empty())
    return (fs::path(d) / "tailor" / "profiles").string();
  if (const std::string d = env("HOME"); !d.empty())
    return (fs::path(d) / ".cache" / "tailor" / "profiles").string();
  throw Error("profile cache", "none of TAILOR_CACHE_DIR, XDG_CACHE_HOME and HOME is set");
}

namespace {

/// The settings part of every cache key: what the profile depends on besides
/// the model's bytes.
OJson settings_json(const ProfileOptions& options) {
  std::vector<std::string> schemes = options.schemes;
  std::sort(schemes.begin(), schemes.end());
  schemes.erase(std::unique(schemes.begin(), schemes.end()), schemes.end());
  const schemes::SchemeParams& s = options.scheme_defaults;
  // "measurement": the revision of the measuring code, raised when a fix
  // changes the numbers a cache entry holds (2: conv layers' output damage
  // ran on the weights packed at load, and Tucker's mode-0 factor comes from
  // the exact SVD; 3: int8-a8 offered on k×k convs, where it runs its own
  // W8A8 kernel; 4: the 1×1 W8A8 kernel's zmm tiles, 1.6–1.9× faster under
  // the same name, and int8-a8 no candidate past the form's limits; 5: the
  // output damage of inputs of different shapes, measured on two threads,
  // could run a Conv with the other thread's shape; 6: -gptq candidates'
  // output damage cross-fitted, DamageOptions::folds; 7: -gptq refits its
  // scales in the output metric), so no entry from before is read back.
  OJson j = {{"measurement", 7},
             {"schemes", schemes},
             {"min_params", options.min_params},
             {"layers", options.layer_regex},
             {"calib_sha256", options.calib.empty() ? std::string() : sha256_file(options.calib)},
             {"seed", options.seed},
             {"damage", options.damage_key},
             {"scheme_params",
              {{"group", s.group},
               {"rank", s.rank},
               {"tucker_rank_fraction", s.tucker_rank_fraction},
               {"tt_cores", s.tt_cores},
               {"tt_max_rank", s.tt_max_rank},
               {"svd",
                {{"oversampling", s.svd.oversampling},
                 {"power_iterations", s.svd.power_iterations},
                 {"seed", s.svd.seed},
                 {"exact_max_dim", s.svd.exact_max_dim}}}}}};
  // Latencies belong to the kernels that ran them: the table this CPU and
  // binary pick (a new kernel under a new name gives a new key).
  if (!options.latency_key.empty()) {
    j["latency"] = options.latency_key;
    j["kernels"] = runtime::kernels::describe(runtime::kernels::active_kernels());
  }
  return j;
}

std::string digest(const OJson& j) {
  return sha256_hex(j.dump(-1, ' ', false, OJson::error_handler_t::replace));
}

}  // namespace

std::string profile_cache_key(const std::string& model_path, const ProfileOptions& options) {
  OJson key = {{"format", kFormat},
               {"version", kProfileFormatVersion},
               {"model_sha256", model_digest(model_path)}};
  key.update(settings_json(options));
  return digest(key);
}

std::string profile_settings_key(const ProfileOptions& options) {
  OJson key = {{"format", kFormat}, {"version", kProfileFormatVersion}};
  key.update(settings_json(options));
  return digest(key);
}

std::string layer_cache_key(const std::string& settings_key, size_t index,
                            const graph::WeightView& weight) {
  const Tensor t = weight.tensor.is_contiguous() ? weight.tensor : weight.tensor.contiguous();
  const std::string bytes =
      sha256_hex(t.nbytes() ? std::string_view(reinterpret_cast<const char*>(t.raw()), t.nbytes())
                            : std::string_view());
  const OJson key = {{"format", kLayerFormat},
                     {"settings", settings_key},
                     {"index", index},
                     {"name", weight.name},
                     {"layout", static_cast<int>(weight.layout)},
                     {"dtype", dtype_name(t.dtype())},
                     {"shape", t.shape()},
                     {"sha256", bytes}};
  return digest(key);
}

std::optional<ModelProfile> load_cached_profile(const std::string& key) {
  const std::string path = entry_path(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const detail::JsonEntry j(read_file(path), path, "tailor profile cache entry");
    j.check_format(kFormat, kProfileFormatVersion);
    if (j.field("key") != key) throw Error(path, "stored under another key");
    if (!j.field("profile_sha256").is_string())
      throw Error(path, "\"profile_sha256\" not a string");
    ModelProfile profile = parse_profile(j.field("profile").dump(), path);
    // The digest covers the profile as profile_to_json writes it, so any
    // change to a number, a label or a layer shows.
    if (sha256_hex(profile_to_json(profile)) != j.field("profile_sha256").get<std::string>())
      throw Error(path, "checksum mismatch: the profile was altered");
    return profile;
  } catch (const Error& e) {
    warn("", std::string(e.what()) + "; ignoring the cache entry, profiling again");
    return std::nullopt;
  }
}

bool store_cached_profile(const std::string& key, const ModelProfile& profile) {
  const std::string path = entry_path(key);
  const std::string text = profile_to_json(profile);
  const OJson entry = {{"format", kFormat},
                       {"version", kProfileFormatVersion},
                       {"key", key},
                       {"profile_sha256", sha256_hex(text)},
                       {"profile", OJson::parse(text)}};
  try {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw Error(fs::path(path).parent_path().string(), "cannot create: " + ec.message());
    write_file_atomic(path, entry.dump(1, ' ', false, OJson::error_handler_t::replace) + "\n");
    return true;
  } catch (const Error& e) {
    warn("", std::string(e.what()) + "; the profile is not cached");
    return false;
  }
}

namespace {

/// A one-layer profile as profile_to_json writes it (no model totals).
ModelProfile as_profile(const LayerProfile& layer) {
  ModelProfile p;
  p.model = "layer";
  p.dense_bytes = layer.dense_bytes;
  p.layers = {layer};
  return p;
}

}  // namespace

std::optional<LayerProfile> load_cached_layer(const std::string& key) {
  std::optional<ModelProfile> p = load_cached_profile(key);
  if (!p) return std::nullopt;
  if (p->layers.size() != 1) {
    warn("", "profile cache entry " + key + " holds " + std::to_string(p->layers.size()) +
                 " layers, not one; profiling the layer again");
    return std::nullopt;
  }
  return std::move(p->layers.front());
}

bool store_cached_layer(const std::string& key, const LayerProfile& layer) {
  return store_cached_profile(key, as_profile(layer));
}

}  // namespace tailor
