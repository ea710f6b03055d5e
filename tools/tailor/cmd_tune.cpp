// tailor tune: tunes a model's compiler decisions (passes, fusion candidates,
// conv column blocks, conv algorithms, per-op threads, threads) against measured latency with every
// method, writes the replayable decision record, prints the method table; --replay re-derives the
// decisions from a record without measuring.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "format.h"
#include "named_inputs.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/load_model.h"
#include "tailor/linalg/threads.h"
#include "tailor/tune/tune.h"

namespace tailor::cli {

namespace {

/// The model as `tailor run --tuning` runs it: compressed weights' forms as
/// compressed ops, f16 tensors and casts computed in f32 (the runtime's Conv
/// takes f32 only: ISNet's f16 biases failed the harness's reference run).
graph::Model model_to_tune(const std::string& path) {
  graph::Model model = graph::recognise_compressed_weights(load_runnable_model(path), {});
  graph::promote_f16_to_f32(model);
  return model;
}

void print_table(const tune::TuneRecord& record) {
  std::cout << fmt::format("{:<11} {:>12} {:>9} {:>13} {:>10} {:>12}\n", "method", "best ms",
                           "speedup", "measurements", "tuning s", "peak MiB");
  // A method none of whose configurations passed the check has no best.
  for (const tune::MethodRow& r : record.table)
    std::cout << fmt::format("{:<11} {:>12} {:>9} {:>13} {:>10.1f} {:>12.2f}\n", r.method,
                             r.best_ms > 0 ? fmt::format("{:.3f}", r.best_ms) : std::string("-"),
                             r.best_ms > 0 ? fmt::format("{:.3f}x", r.speedup) : std::string("-"),
                             r.measurements, r.tuning_s,
                             static_cast<double>(r.peak_bytes) / (1024.0 * 1024.0));
}

// Best latency reached against measurements spent, per method (issue 16's
// sample efficiency), and how many measurements each needs to come within
// 97% of the best any method found.
void print_curves(const tune::TuneRecord& record) {
  const std::vector<tune::SearchCurve> curves = tune::search_curves(record);
  size_t longest = 0;
  double best = 0;
  for (const auto& c : curves) {
    longest = std::max(longest, c.best_ms.size());
    for (double b : c.best_ms)
      if (b > 0 && (best == 0 || b < best)) best = b;
  }
  if (best == 0) return;
  std::cout << fmt::format("best so far (ms) after N measurements:\n{:>6}", "N");
  for (const auto& c : curves) std::cout << fmt::format(" {:>11}", c.method);
  std::cout << "\n";
  for (size_t n = 1; n <= longest; n = n < 4 ? n + 1 : (n < 16 ? n + 4 : n * 2)) {
    std::cout << fmt::format("{:>6}", n);
    for (const auto& c : curves)
      std::cout << (n <= c.best_ms.size() && c.best_ms[n - 1] > 0
                        ? fmt::format(" {:>11.3f}", c.best_ms[n - 1])
                        : fmt::format(" {:>11}", "-"));
    std::cout << "\n";
  }
  std::cout << fmt::format("{:>6}", "last");
  for (const auto& c : curves)
    std::cout << (c.best_ms.empty() || c.best_ms.back() == 0
                      ? fmt::format(" {:>11}", "-")
                      : fmt::format(" {:>11.3f}", c.best_ms.back()));
  std::cout << fmt::format("\nmeasurements to reach 97% of the best found ({:.3f} ms):", best);
  for (const auto& c : curves) {
    const int n = tune::measurements_to_reach(c, best, 0.97);
    std::cout << " " << c.method << " " << (n < 0 ? std::string("never") : std::to_string(n));
  }
  std::cout << "\n";
}

}  // namespace

void add_tune(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("tune", "Tune a model's compiler decisions against measured latency");
  static std::string path, out_dir = "tuned", replay_path, cost_model_path, statistic = "median",
                           clock = "wall", error_metric = "max";
  static std::vector<std::string> shape_specs, input_specs;
  static int measurements = 24, threads = 0, repeats = 5, paired_rounds = 7;
  static double anchor = 0.0, tolerance = tune::HarnessOptions{}.tolerance;
  static uint64_t seed = 0;
  cmd->add_option("MODEL", path, "ONNX model (with --replay: defaults to the record's model)");
  cmd->add_option("--measurements", measurements, "Measurements per method")->capture_default_str();
  cmd->add_option("--seed", seed, "Seed of the random inputs and the searches")
      ->capture_default_str()
      ->check(kUnsigned);
  cmd->add_option("--threads", threads, "Most threads offered (0: OpenMP's default)")
      ->capture_default_str();
  cmd->add_option("--repeats", repeats, "Timed runs per candidate")->capture_default_str();
  cmd->add_option("--paired-rounds", paired_rounds,
                  "Interleaved rounds re-measuring the best candidates")
      ->capture_default_str();
  cmd->add_option("--statistic", statistic, "Latency compared: median or min of the timed runs")
      ->capture_default_str();
  cmd->add_option("--clock", clock,
                  "Run time measured: wall (latency) or cpu (process CPU time; --threads 1 only)")
      ->capture_default_str();
  cmd->add_option("--error", error_metric,
                  "Error --tolerance bounds, relative to the output's largest magnitude: max "
                  "(the largest element's deviation) or mean (the mean deviation)")
      ->capture_default_str();
  cmd->add_option("--input-shape", shape_specs,
                  "NAME=D1xD2x... for inputs with symbolic dims (repeatable)");
  cmd->add_option("-i,--input", input_specs,
                  "NAME=FILE.npy: check and time every configuration on this input instead of "
                  "seeded random ones (repeatable, one per model input)");
  cmd->add_option("--cost-model", cost_model_path,
                  "Cost-model JSON to warm-start from (a cost_model.json)");
  cmd->add_option("--anchor", anchor,
                  "Pull of each cost-model refit towards the starting (--cost-model) coefficients")
      ->capture_default_str();
  cmd->add_option("--tolerance", tolerance,
                  "Largest accepted output error relative to the output's largest magnitude")
      ->capture_default_str();
  cmd->add_option("-o,--output", out_dir, "Folder for decisions.json and cost_model.json")
      ->capture_default_str();
  cmd->add_option("--replay", replay_path,
                  "Re-derive the decisions of this decisions.json without measuring");
  cmd->callback([cmd] {
    if (!replay_path.empty()) {
      // Replay measures nothing: an option that only shapes a measurement
      // would be silently ignored, so it is refused.
      for (const CLI::Option* opt : cmd->get_options())
        if (opt->count() > 0 && opt->get_name() != "--replay" && opt->get_name() != "MODEL" &&
            opt->get_name() != "--help")
          throw Error(opt->get_name(),
                      "has no effect with --replay, which re-derives the record's decisions "
                      "without measuring (give MODEL and --replay only)");
      const tune::TuneRecord record = tune::read_record(replay_path);
      const std::string model_path = path.empty() ? record.model : path;
      if (model_path.empty()) throw Error("--replay", "the record names no model; give MODEL");
      const graph::Model model = model_to_tune(model_path);
      const tune::Configuration c = [&] {
        try {
          return tune::replay(model, record);
        } catch (const Error& e) {  // the record does not fit this model: name the record
          throw Error(replay_path, e.what());
        }
      }();
      const tune::Configuration& recorded = record.chosen.config;
      std::cout << fmt::format("replay: chosen configuration {} (record: {})\n",
                               tune::DecisionSpace::key(c), tune::DecisionSpace::key(recorded));
      if (c != recorded)
        throw Error(replay_path, "replay chose a different configuration than the record");
      std::cout << "replay: same decisions as the record\n";
      return;
    }
    if (path.empty()) throw Error("tune", "MODEL is required (or --replay FILE)");
    linalg::set_threads(threads);
    if (repeats < 1) throw Error("--repeats", "must be >= 1");
    if (paired_rounds < 1) throw Error("--paired-rounds", "must be >= 1");
    tune::TuneOptions o;
    o.measurements = measurements;
    o.seed = seed;
    o.threads = threads;
    o.harness.repeats = repeats;
    o.paired_rounds = paired_rounds;
    o.harness.statistic = statistic;
    o.harness.clock = clock;
    o.harness.error = error_metric;
    if (!(anchor >= 0)) throw Error("--anchor", "must be >= 0");
    if (!(tolerance >= 0) || !std::isfinite(tolerance))
      throw Error("--tolerance", "must be finite and >= 0");
    o.gradient.anchor = anchor;
    o.harness.tolerance = tolerance;
    o.model_path = path;
    for (const auto& spec : shape_specs) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("--input-shape", "expected NAME=D1xD2x..., got \"" + printable(spec) + "\"");
      o.input_shapes[spec.substr(0, eq)] =
          parse_input_dims(spec.substr(eq + 1), spec, "NAME=D1xD2x...");
    }
    if (!cost_model_path.empty()) {
      try {
        const nlohmann::json j = nlohmann::json::parse(read_file(cost_model_path));
        o.cost_model = tune::CostModel::from_json(j.contains("fitted") ? j.at("fitted") : j,
                                                  tune::feature_names());
      } catch (const nlohmann::json::exception& e) {
        throw Error(cost_model_path, std::string("bad JSON: ") + e.what());
      } catch (const Error& e) {
        throw Error(cost_model_path, e.message());
      }
    }
    std::map<std::string, std::string> input_files;
    o.inputs = read_named_inputs(input_specs, input_files);
    for (const auto& [name, t] : o.inputs)
      if (o.input_shapes.count(name))
        throw Error("--input-shape", "input '" + printable(name) +
                                         "' is also given by --input, whose file sets its shape");
    const graph::Model model = model_to_tune(path);
    const auto t0 = std::chrono::steady_clock::now();
    const tune::TuneRecord record = [&] {
      try {
        return tune::tune_model(model, o);
      } catch (const Error& e) {
        if (const Error named = name_input_file(e, input_files); named.source() != e.source())
          throw named;
        throw;
      }
    }();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::error_code ec;
      std::filesystem::create_directories(out_dir, ec);
      if (ec) throw Error(out_dir, "cannot create the output folder: " + ec.message());
    }
    const std::string dest = (std::filesystem::path(out_dir) / "decisions.json").string();
    tune::write_record(dest, record);
    write_file_atomic((std::filesystem::path(out_dir) / "cost_model.json").string(),
                      record.cost_model.fitted.to_json(tune::feature_names()).dump(1));
    print_table(record);
    print_curves(record);
    const tune::CostModelRecord& cm = record.cost_model;
    std::cout << fmt::format(
        "decision space: {} decisions, {:.3g} points; cost model Spearman on {} held-out "
        "configurations: {}\n",
        record.space.decisions.size(), record.space.points(), cm.held_out,
        cm.spearman_held_out ? fmt::format("{:.3f}", *cm.spearman_held_out) : std::string("n/a"));
    {
      // The start of the gradient method's cost model: the kernel kinds'
      // rates it measured (tune::measured_start) or --cost-model's.
      const std::vector<double> c0 = cm.initial.coefficients();
      const auto& names = tune::feature_names();
      auto coef = [&](const char* term) {
        return c0[static_cast<size_t>(std::find(names.begin(), names.end(), term) - names.begin())];
      };
      std::cout << fmt::format(
          "cost model start ({}), ms per 10^7 FLOPs: gemm {:.3g}, Winograd {:.3g}, "
          "compressed weight-only {:.3g}, W8A8 {:.3g}\n",
          cost_model_path.empty() ? "measured on probe layers" : printable(cost_model_path),
          coef("gemm_flops_1e7_per_thread"), coef("winograd_flops_1e7_per_thread"),
          coef("packed_weight_flops_1e7_per_thread"), coef("w8a8_flops_1e7_per_thread"));
    }
    if (!record.screened.empty()) {
      // The gradient method's screen: untimed checks outside its measurements.
      double screen_s = 0;
      int failed = 0;
      for (const auto& m : record.screened) screen_s += m.cost_s, failed += !m.ok;
      std::cout << fmt::format(
          "gradient screen: {} untimed checks of one approximate choice on the default ({} "
          "past the tolerance), {:.1f} s, not counted as measurements\n",
          record.screened.size(), failed, screen_s);
    }
    std::cout << "chosen (differs from default):";
    const auto& space = record.space.decisions;
    const tune::Configuration& chosen = record.chosen.config;
    int shown = 0;
    for (size_t i = 0; i < space.size(); ++i)
      if (chosen[i] != space[i].default_choice) {
        if (shown++ < 12)
          std::cout << " " << space[i].name << "="
                    << space[i].choices[static_cast<size_t>(chosen[i])];
      }
    if (shown > 12) std::cout << " ... (" << shown << " in all)";
    if (shown == 0) std::cout << " nothing";
    // How far the chosen configuration's outputs moved (approximate choices,
    // such as W8A8, move them by more than rounding).
    std::string moved;
    for (const auto& m : record.measured)
      if (m.key == record.chosen.key) {
        moved = fmt::format(", outputs within {:.2g} of max |r| (--error {}, --tolerance {:.2g})",
                            m.max_rel_error, record.harness.error, record.harness.tolerance);
        break;
      }
    std::cout << fmt::format("\nchosen {} {:.3f} ms{}; record {} ({:.1f} s)\n", statistic,
                             record.chosen.latency_ms, moved, printable(dest), secs);
  });
}

}  // namespace tailor::cli
