// tailor profile: every layer of a model under every applicable scheme, written
// to profile.json and summarised as a table.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "format.h"
#include "tailor/compress/damage_fit.h"
#include "tailor/compress/output_profile.h"
#include "tailor/core/checked.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/load_model.h"
#include "tailor/linalg/threads.h"
#include "tailor/profile/latency.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profile_cache.h"
#include "tailor/profile/profiler.h"
#include "tailor/profile/shard.h"
#include "tailor/profile/shard_mpi.h"
#include "tailor/tune/harness.h"

namespace tailor::cli {
namespace {

/// A candidate is "good enough" within this relative error (the table's mark).
constexpr double kMarkError = 0.02;

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

/// Whether the profile cache can be used here (a folder is configured); says
/// why not on stderr otherwise.
bool cache_usable() {
  try {
    profile_cache_dir();
    return true;
  } catch (const tailor::Error& e) {
    std::cerr << "tailor: warning: " << e.what() << "; finished layers are not cached\n";
    return false;
  }
}

/// `--objective output`: what compress_model profiles with (output_profile.h).
struct OutputMode {
  std::optional<graph::Model> llama;
  compress::OutputObjective objective;
};

/// Sets `options` to compress_model's profile settings for `calib` (the
/// CompressOptions the flags filled: --calib, --ocr-*, --inputs, --sequences,
/// --length), keeping a --layers regex, and gathers the calibration inputs
/// and Grams as compress does. A model tailor cannot run (a safetensors file
/// that is not a llama checkpoint) is an Error naming it and what to give.
OutputMode output_mode(const std::string& path, const graph::Model& model,
                       compress::CompressOptions calib, ProfileOptions& options) {
  OutputMode m;
  try {
    m.llama = compress::llama_decoder(model, path);
  } catch (const tailor::Error& e) {
    throw tailor::Error(path, fmt::format("--objective output runs the model on calibration "
                                          "inputs, and this {} file is neither an ONNX model nor a "
                                          "llama checkpoint ({}); give an ONNX model or a llama "
                                          "checkpoint, or profile the weights without --objective",
                                          model.format, e.what()));
  }
  calib.model = path;
  calib.schemes = options.schemes;
  calib.min_params = options.min_params;
  calib.threads = options.threads;
  const std::string layers = options.layer_regex;
  const std::string latency = options.latency_key;
  options = compress::compress_profile_options(calib, m.llama ? &*m.llama : nullptr);
  if (!layers.empty()) options.layer_regex = layers;
  options.latency_key = latency;
  m.objective =
      compress::prepare_output_objective(model, m.llama ? &*m.llama : nullptr, calib, options);
  return m;
}

/// Output damage of `part`, layers `indices` of the `count` profiled, but
/// for layers that came from the layer cache with their damage. With `cache`,
/// each layer measured goes back to the layer cache with its damage as soon
/// as it is done, so that a rerun after a failure measures only the rest.
/// With `say`, one line on stdout naming the metric, the inputs and the seconds.
void measure_damage(const OutputMode& m, const graph::Model& model, const ProfileOptions& options,
                    ModelProfile& part, const std::vector<size_t>& indices, size_t count,
                    bool cache, bool say) {
  const auto t0 = std::chrono::steady_clock::now();
  // The layers still without damage, their indices among the `count`
  // profiled, and their positions in `part`.
  ModelProfile unmeasured;
  std::vector<size_t> unmeasured_indices, unmeasured_at;
  for (size_t k = 0; k < part.layers.size(); ++k) {
    const auto& cands = part.layers[k].candidates;
    if (std::all_of(cands.begin(), cands.end(),
                    [](const Candidate& c) { return c.output_damage.has_value(); }) &&
        !cands.empty())
      continue;
    unmeasured.layers.push_back(std::move(part.layers[k]));
    unmeasured_indices.push_back(indices[k]);
    unmeasured_at.push_back(k);
  }
  std::function<void(size_t, const LayerProfile&)> store;
  if (cache) {
    const std::string settings = profile_settings_key(options);
    store = [weights = graph::weights(model), settings](size_t index, const LayerProfile& layer) {
      if (const graph::WeightView* w = graph::find_weight(weights, layer.name))
        store_cached_layer(layer_cache_key(settings, index, *w), layer);
    };
  }
  // The layers go back to their places in `part` whether or not the pass throws.
  auto put_back = [&] {
    for (size_t k = 0; k < unmeasured_at.size(); ++k)
      part.layers[unmeasured_at[k]] = std::move(unmeasured.layers[k]);
  };
  try {
    compress::measure_profile_damage(m.llama ? *m.llama : model, m.objective, options, unmeasured,
                                     unmeasured_indices, count, store);
  } catch (...) {
    put_back();
    throw;
  }
  put_back();
  part.output_metric = unmeasured.output_metric;
  part.calibration = unmeasured.calibration;
  if (say)
    std::cout << fmt::format(
        "output damage ({}) of {} layers ({} with their damage from the cache) on {} in {:.2f} s "
        "(Grams {:.2f} s)\n",
        part.output_metric, indices.size(), indices.size() - unmeasured_indices.size(),
        part.calibration,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        m.objective.grams.seconds());
  if (const std::string fits = compress::damage_fit_summary(part); say && !fits.empty())
    std::cout << fits << "\n";
}

/// `mpirun -n N tailor profile`: every rank profiles its layers, rank 0 writes.
void profile_mpi(const std::string& path, const std::string& output, ProfileOptions options,
                 bool calibrated, const std::optional<compress::CompressOptions>& damage,
                 bool store) {
  // Without the MPI module every rank fails alike: rank 0 says why, once (the
  // others wait so that mpirun does not end the job before it has).
  std::optional<mpi::World> started;
  try {
    started.emplace();
  } catch (const std::exception&) {
    if (mpi::launched_rank() == 0) throw;
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::exit(2);
  }
  const mpi::World& world = *started;
  try {
    const bool cache = cache_usable();
    const graph::Model model = load_model_mapped(path);
    std::optional<OutputMode> mode;
    if (damage) mode = output_mode(path, model, *damage, options);
    const size_t count = plan_layers(model, options).size();
    const std::optional<ModelProfile> profile = profile_model_world(
        model, options, world, cache, [&](ModelProfile& part, const std::vector<size_t>& mine) {
          if (mode) measure_damage(*mode, model, options, part, mine, count, cache, false);
        });
    if (!profile) return;
    if (store && cache) store_cached_profile(profile_cache_key(path, options), *profile);
    write_profile(output, *profile);
    print_table(*profile, calibrated);
    std::cout << fmt::format("wrote {} ({} ranks)\n", output, world.size());
  } catch (const std::exception& e) {
    // The other ranks may wait in a collective call: end the whole job. An
    // error every rank meets alike (a bad model file) is printed once, by
    // rank 0; another rank prints only when rank 0 has not ended the job
    // within two seconds (its error is its own).
    if (world.rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    const std::string where = world.rank() == 0 ? "" : fmt::format("rank {}: ", world.rank());
    std::fprintf(stderr, "tailor: error: %s%s\n", where.c_str(), e.what());
    std::fflush(stderr);
    std::cout.flush();
    world.abort(2);
  }
}

/// `tailor profile --shard I/N`: this shard's layers, written as a shard file.
/// Without -o the file is profile.shard-I-of-N.json, so that the shards of one
/// run written in one folder do not overwrite each other.
void profile_shard(const std::string& path, std::string output, bool output_given,
                   ProfileOptions options, const std::string& shard_text,
                   const std::optional<compress::CompressOptions>& damage) {
  const auto [index, count] = parse_shard(shard_text);
  if (!output_given) output = fmt::format("profile.shard-{}-of-{}.json", index, count);
  const graph::Model model = load_model_mapped(path);
  std::optional<OutputMode> mode;
  if (damage) mode = output_mode(path, model, *damage, options);
  ProfileShard shard;
  shard.index = index;
  shard.count = count;
  shard.key = profile_cache_key(path, options);
  const std::vector<PlannedLayer> layers = plan_layers(model, options);
  for (const PlannedLayer& l : layers) shard.layers.push_back(l.name);
  const std::vector<size_t> mine = layers_of_shard(shard_layers(layers, count), index);
  const auto reused = std::make_shared<std::atomic<size_t>>(0);
  LayerSelection sel;
  const bool use_cache = cache_usable();
  if (use_cache)
    sel = cached_selection(mine, profile_settings_key(options), reused);
  else
    sel.only = mine;
  shard.part = profile_model(model, options, sel);
  if (mode) measure_damage(*mode, model, options, shard.part, mine, layers.size(), use_cache, true);
  shard.part.model = path;
  write_shard(output, shard);
  std::cout << fmt::format("shard {}/{}: {} of {} layers ({} from the cache); wrote {}\n", index,
                           count, mine.size(), layers.size(), reused->load(), output);
}

}  // namespace

std::vector<std::string> split_scheme_list(const std::string& list) {
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

void add_profile(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "profile", "Measure every layer under every applicable scheme; write profile.json");
  static std::string path, output = "profile.json", scheme_list, shard;
  static ProfileOptions options;
  static bool cache = false, latency = false;
  static std::vector<std::string> shape_specs;
  static std::string objective;
  static compress::CompressOptions damage;  // --objective output's calibration flags
  cmd->add_option("MODEL", path, "ONNX, safetensors (file or HF folder), GGUF or llama2.c .bin")
      ->required();
  static CLI::Option* output_option = cmd->add_option(
      "-o,--output", output,
      "Profile to write (JSON, schema in docs/formats.md); with --shard I/N, the shard file "
      "(default profile.shard-I-of-N.json)");
  output_option->capture_default_str();
  cmd->add_option("--schemes", scheme_list,
                  "Comma-separated labels (int8, int4-g64, lowrank-r32, ...) or families "
                  "(lowrank, int4-g); default: the whole catalog");
  cmd->add_option("--layers", options.layer_regex,
                  "Profile only weights whose name matches (regex)");
  cmd->add_option("--min-params", options.min_params, "Smaller weights stay dense (fixed bytes)")
      ->capture_default_str();
  cmd->add_option("--calib", options.calib,
                  "safetensors of per-layer f32 [in] mean x² vectors: activation-aware error; "
                  "with --objective output, compress's --calib folder of calibration inputs");
  cmd->add_option("--objective", objective,
                  "output: also measure every candidate's output damage on the calibration inputs "
                  "compress takes (stored and cached as compress stores them; sharded by layer "
                  "with --shard or mpirun)");
  auto* ocr_lines = cmd->add_option("--ocr-lines", damage.ocr_lines,
                                    "With --objective output: OCR fixture folder (as compress)");
  auto* ocr_keys = cmd->add_option("--ocr-keys", damage.ocr_keys,
                                   "With --objective output: PaddleOCR key file (as compress)");
  auto* inputs = cmd->add_option("--inputs", damage.random_inputs,
                                 "With --objective output: random calibration inputs when the "
                                 "model has none (as compress)");
  auto* sequences = cmd->add_option("--sequences", damage.kld_sequences,
                                    "With --objective output, llama: sampled sequences");
  auto* length = cmd->add_option("--length", damage.kld_length,
                                 "With --objective output, llama: tokens per sequence");
  auto* damage_mode =
      cmd->add_option("--damage", damage.damage,
                      "With --objective output: measured, fitted (2-3 probes per layer and "
                      "scheme family, the rest alpha * rel_error^2) or auto (as compress)")
          ->check(CLI::IsMember({"auto", "measured", "fitted"}));
  static std::vector<CLI::Option*> damage_flags;
  damage_flags = {ocr_lines, ocr_keys, inputs, sequences, length, damage_mode};
  cmd->add_option("--threads", options.threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  cmd->add_flag("--cache", cache,
                "Reuse a cached profile of the same model bytes and settings, or store this one "
                "(in $TAILOR_CACHE_DIR, else $XDG_CACHE_HOME/tailor, else ~/.cache/tailor)");
  cmd->add_flag("--latency", latency,
                "Also time every candidate's op on its real shape (CPU ms, 1 thread; for plan "
                "--max-latency); off by default: it runs every candidate once per repeat");
  cmd->add_option("--input-shape", shape_specs,
                  "With --latency: NAME=D1xD2x... for an input with symbolic dims (a symbolic "
                  "first dim is 1)");
  cmd->add_option("--shard", shard,
                  "I/N: profile only shard I (0-based) of N, layers dealt out by estimated cost; "
                  "writes a shard file for `tailor profile-merge` (finished layers are cached)");
  cmd->callback([] {
    tailor::linalg::set_threads(options.threads);
    if (!scheme_list.empty()) options.schemes = split_scheme_list(scheme_list);
    options.progress = true;
    std::optional<compress::CompressOptions> calib;
    if (!objective.empty() && objective != "output")
      throw tailor::Error("--objective",
                          "profile measures only \"output\" (output damage); "
                          "numel, sum and activation are chosen at plan time, got \"" +
                              printable(objective) + "\"");
    for (const CLI::Option* f : damage_flags)
      if (f->count() > 0 && objective.empty())
        throw tailor::Error(f->get_name(), "applies only with --objective output");
    if (!objective.empty()) {
      calib = damage;
      calib->calib_dir = options.calib;  // compress's --calib: a folder of inputs
      options.calib.clear();
    }
    const bool calibrated = !options.calib.empty();
    if (!shape_specs.empty() && !latency)
      throw tailor::Error("--input-shape", "applies only with --latency");
    std::map<std::string, Tensor> latency_input;
    if (latency) {
      if (mpi::launched_size() > 1 || !shard.empty())
        throw tailor::Error("--latency", "not with --shard or mpirun (timed in one process)");
      std::map<std::string, std::vector<int64_t>> shapes;
      for (const auto& spec : shape_specs) {
        const size_t eq = spec.find('=');
        if (eq == std::string::npos || eq == 0)
          throw tailor::Error("--input-shape",
                              "expected NAME=D1xD2x..., got \"" + printable(spec) + "\"");
        shapes[spec.substr(0, eq)] = parse_input_dims(spec.substr(eq + 1), spec, "NAME=D1xD2x...");
      }
      latency_input = tune::random_inputs(load_model_mapped(path), shapes, options.seed);
      options.latency_key = latency_key(latency_input, {});
    }
    if (mpi::launched_size() > 1) {
      if (!shard.empty())
        throw tailor::Error("--shard", "not with mpirun: the ranks are the shards");
      profile_mpi(path, output, options, calibrated, calib, cache);
      return;
    }
    if (!shard.empty()) {
      profile_shard(path, output, output_option->count() > 0, options, shard, calib);
      return;
    }
    std::optional<graph::Model> model;
    std::optional<OutputMode> mode;
    if (calib) {
      model = load_model_mapped(path);
      mode = output_mode(path, *model, *calib, options);
    }
    const std::string key = cache ? profile_cache_key(path, options) : std::string();
    std::optional<ModelProfile> cached = cache ? load_cached_profile(key) : std::nullopt;
    if (cached) {
      cached->model = path;
      std::cout << "cached profile " << key << " (" << profile_cache_dir() << ")\n";
    }
    if (!cached && !model) model = load_model_mapped(path);
    ModelProfile profile = cached ? *cached : profile_model(*model, options);
    if (mode && !cached) {
      std::vector<size_t> all(profile.layers.size());
      std::iota(all.begin(), all.end(), size_t{0});
      measure_damage(*mode, *model, options, profile, all, all.size(), false, true);
    }
    if (latency && !cached) measure_latencies(*model, latency_input, profile);
    if (cache && !cached) store_cached_profile(key, profile);
    write_profile(output, profile);
    print_table(profile, calibrated);
    std::cout << "wrote " << output << "\n";
  });

  auto* merge = app.add_subcommand(
      "profile-merge", "Merge the shard files of `tailor profile --shard I/N` into profile.json");
  static std::vector<std::string> shard_paths;
  static std::string merged = "profile.json";
  merge->add_option("SHARD", shard_paths, "Every shard file of one run (any order)")->required();
  merge->add_option("-o,--output", merged, "Profile to write")->capture_default_str();
  static bool merge_cache = false;
  merge->add_flag("--cache", merge_cache,
                  "Also store the merged profile in the profile cache under the shards' key (as "
                  "`tailor profile --cache` and compress key it)");
  merge->callback([] {
    std::vector<ProfileShard> shards;
    for (const std::string& p : shard_paths) shards.push_back(read_shard(p));
    const ModelProfile profile = merge_shards(shards, shard_paths);
    if (merge_cache) store_cached_profile(shards.front().key, profile);
    write_profile(merged, profile);
    std::cout << fmt::format("merged {} shards, {} layers; wrote {}\n", shards.size(),
                             profile.layers.size(), merged);
  });
}

}  // namespace tailor::cli
