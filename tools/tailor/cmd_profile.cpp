// tailor profile: every layer of a model under every applicable scheme, written
// to profile.json and summarised as a table.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>

#include "commands.h"
#include "tailor/core/checked.h"
#include "tailor/core/error.h"
#include "tailor/io/load_model.h"
#include "tailor/linalg/threads.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profile_cache.h"
#include "tailor/profile/profiler.h"

namespace tailor::cli {
namespace {

/// A candidate is "good enough" within this relative error (the table's mark).
constexpr double kMarkError = 0.02;

/// "int8,int4, lowrank" → {"int8", "int4", "lowrank"}; empty items are refused.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) throw tailor::Error("--schemes", fmt::format("empty item in \"{}\"", list));
    out.push_back(item);
  }
  if (out.empty()) throw tailor::Error("--schemes", "no scheme given");
  return out;
}

/// The error the table marks by: activation-aware when calibrated.
double mark_error(const Candidate& c) {
  return c.rel_error_activation ? *c.rel_error_activation : c.rel_error;
}

/// Index of the cheapest candidate within kMarkError, or -1 when none is.
int marked(const LayerProfile& layer) {
  int best = -1;
  for (size_t i = 0; i < layer.candidates.size(); ++i) {
    const Candidate& c = layer.candidates[i];
    if (mark_error(c) <= kMarkError && (best < 0 || c.bytes < layer.candidates[best].bytes))
      best = static_cast<int>(i);
  }
  return best;
}

void print_table(const ModelProfile& p, bool calibrated) {
  int64_t marked_total = p.fixed_bytes;
  for (const LayerProfile& layer : p.layers) {
    std::cout << fmt::format("{} [{}, {}]  {} params, {} bytes dense\n", layer.name,
                             layer.shape_out_in[0], layer.shape_out_in[1], layer.numel,
                             layer.dense_bytes);
    std::vector<size_t> order(layer.candidates.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return layer.candidates[a].bytes < layer.candidates[b].bytes;
    });
    const int mark = marked(layer);
    std::cout << fmt::format(
        "    {:<16} {:>12} {:>7} {:>10} {}{:>12} {:>9}\n", "scheme", "bytes", "bpw", "rel_error",
        calibrated ? fmt::format("{:>10} ", "act_error") : "", "macs", "encode_s");
    for (size_t i : order) {
      const Candidate& c = layer.candidates[i];
      const std::string act =
          calibrated ? fmt::format("{:>10.6f} ", c.rel_error_activation.value_or(0)) : "";
      std::cout << fmt::format("  {} {:<16} {:>12} {:>7.3f} {:>10.6f} {}{:>12} {:>9.3f}\n",
                               static_cast<int>(i) == mark ? '*' : ' ', c.label, c.bytes,
                               8.0 * c.bytes / layer.numel, c.rel_error, act, c.macs,
                               c.encode_seconds);
    }
    marked_total =
        checked_add(marked_total, mark >= 0 ? layer.candidates[mark].bytes : layer.dense_bytes,
                    p.model, "the marked byte total");
  }
  std::cout << fmt::format(
      "\n{} layers; * = cheapest with {}error <= {:g}% (a layer with none stays dense)\n"
      "dense bytes:  {}\nfixed bytes:  {}\nmarked total: {} ({:.1f}% of dense)\n",
      p.layers.size(), calibrated ? "activation-aware " : "", kMarkError * 100, p.dense_bytes,
      p.fixed_bytes, marked_total, p.dense_bytes ? 100.0 * marked_total / p.dense_bytes : 0.0);
}

}  // namespace

void add_profile(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "profile", "Measure every layer under every applicable scheme; write profile.json");
  static std::string path, output = "profile.json", scheme_list;
  static ProfileOptions options;
  static bool cache = false;
  cmd->add_option("MODEL", path, "ONNX, safetensors (file or HF folder), GGUF or llama2.c .bin")
      ->required();
  cmd->add_option("-o,--output", output, "Profile to write (JSON, schema in docs/formats.md)")
      ->capture_default_str();
  cmd->add_option("--schemes", scheme_list,
                  "Comma-separated labels (int8, int4-g64, lowrank-r32, ...) or families "
                  "(lowrank, int4-g); default: the whole catalog");
  cmd->add_option("--layers", options.layer_regex,
                  "Profile only weights whose name matches (regex)");
  cmd->add_option("--min-params", options.min_params, "Smaller weights stay dense (fixed bytes)")
      ->capture_default_str();
  cmd->add_option("--calib", options.calib,
                  "safetensors of per-layer f32 [in] mean x² vectors: activation-aware error");
  cmd->add_option("--threads", options.threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  cmd->add_flag("--cache", cache,
                "Reuse a cached profile of the same model bytes and settings, or store this one "
                "(in $TAILOR_CACHE_DIR, else $XDG_CACHE_HOME/tailor, else ~/.cache/tailor)");
  cmd->callback([] {
    tailor::linalg::set_threads(options.threads);
    if (!scheme_list.empty()) options.schemes = split_list(scheme_list);
    options.progress = true;
    const std::string key = cache ? profile_cache_key(path, options) : std::string();
    std::optional<ModelProfile> cached = cache ? load_cached_profile(key) : std::nullopt;
    if (cached) {
      cached->model = path;
      std::cout << "cached profile " << key << " (" << profile_cache_dir() << ")\n";
    }
    const ModelProfile profile = cached ? *cached : profile_model(load_model_mapped(path), options);
    if (cache && !cached) store_cached_profile(key, profile);
    write_profile(output, profile);
    print_table(profile, !options.calib.empty());
    std::cout << "wrote " << output << "\n";
  });
}

}  // namespace tailor::cli
