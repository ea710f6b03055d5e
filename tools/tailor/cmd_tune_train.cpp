// tailor tune-train: measures configurations of several models, fits one cost
// model to all of them, saves the learned parameters (the warm start of
// `tailor tune --cost-model`), and with --evaluate compares that warm start
// with the default initial coefficients on models outside the training set.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/load_model.h"
#include "tailor/linalg/threads.h"
#include "tailor/tune/train.h"

namespace tailor::cli {

namespace {

using json = nlohmann::json;

// The input shapes for `model`: the specs without a "MODEL:" prefix and those
// whose prefix is this model's path as given.
std::map<std::string, std::vector<int64_t>> shapes_for(const std::string& model,
                                                       const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--input-shape",
                  "expected [MODEL:]NAME=D1xD2x..., got \"" + printable(spec) + "\"");
    std::string lhs = spec.substr(0, eq);
    const size_t colon = lhs.rfind(':');
    if (colon != std::string::npos) {
      if (lhs.substr(0, colon) != model) continue;
      lhs = lhs.substr(colon + 1);
    }
    out[lhs] = parse_input_dims(spec.substr(eq + 1), spec, "[MODEL:]NAME=D1xD2x...");
  }
  return out;
}

std::string rho_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.3f}", *r) : std::string("n/a");
}

json opt(const std::optional<double>& r) {
  return r ? json(*r) : json();
}

}  // namespace

void add_tune_train(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tune-train",
      "Fit one cost model to measured configurations of several models (tune's warm start)");
  static std::vector<std::string> models, evaluate, shape_specs;
  static std::string out_dir = "cost-model", statistic = "min", clock = "wall";
  static int measurements = 16, threads = 1, repeats = 5;
  static uint64_t seed = 0;
  static double held_out = 0.25, anchor = 0.0, tolerance = 1e-5;
  static std::vector<int> ks = {2, 4, 8};
  cmd->add_option("MODELS", models, "ONNX models to train on")->required();
  cmd->add_option("--measurements", measurements, "Configurations measured per model")
      ->capture_default_str();
  cmd->add_option("--seed", seed, "Seed of the inputs, the sampling and the split")
      ->capture_default_str()
      ->check(kUnsigned);
  cmd->add_option("--threads", threads, "Most threads offered (0: OpenMP's default)")
      ->capture_default_str();
  cmd->add_option("--repeats", repeats, "Timed runs per configuration")->capture_default_str();
  cmd->add_option("--statistic", statistic, "Latency fitted: median or min of the timed runs")
      ->capture_default_str();
  cmd->add_option("--clock", clock,
                  "Run time measured: wall (latency) or cpu (process CPU time; --threads 1 only)")
      ->capture_default_str();
  cmd->add_option("--tolerance", tolerance,
                  "Largest accepted output error relative to the output's largest magnitude")
      ->capture_default_str();
  cmd->add_option("--held-out", held_out, "Fraction of each model's samples held out for ρ")
      ->capture_default_str();
  cmd->add_option("--input-shape", shape_specs,
                  "[MODEL:]NAME=D1xD2x... for inputs with symbolic dims (repeatable; no "
                  "MODEL: prefix = every model)");
  cmd->add_option("--evaluate", evaluate,
                  "Models outside the training set to compare the warm start on");
  cmd->add_option("--k", ks, "Measurement counts of the warm-start comparison")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--anchor", anchor,
                  "Pull of each refit towards the starting coefficients in the comparison")
      ->capture_default_str();
  cmd->add_option("-o,--output", out_dir, "Folder for cost_model.json and samples.json")
      ->capture_default_str();
  cmd->callback([] {
    if (measurements < 1) throw Error("--measurements", "must be >= 1");
    linalg::set_threads(threads);
    if (repeats < 1) throw Error("--repeats", "must be >= 1");
    if (!(held_out >= 0 && held_out < 1)) throw Error("--held-out", "must be in [0, 1)");
    if (!(anchor >= 0)) throw Error("--anchor", "must be >= 0");
    for (int k : ks)
      if (k < 0) throw Error("--k", "must be >= 0");
    tune::HarnessOptions h;
    h.repeats = repeats;
    h.statistic = statistic;
    h.clock = clock;
    if (!(tolerance >= 0) || !std::isfinite(tolerance))
      throw Error("--tolerance", "must be finite and >= 0");
    h.tolerance = tolerance;
    if (clock == "cpu" && threads != 1)
      throw Error("--clock", "cpu time is a latency only for one thread; give --threads 1");
    // Every named file and every MODEL: prefix checked before the (long)
    // measurements; the output folder made only once there is something to
    // write, so a failure leaves none behind.
    for (const auto* list : {&models, &evaluate})
      for (const auto& path : *list)
        if (!std::filesystem::is_regular_file(path)) throw Error(path, "no such file");
    for (const auto& spec : shape_specs) {
      const std::string lhs = spec.substr(0, spec.find('='));
      const size_t colon = lhs.rfind(':');
      if (colon == std::string::npos) continue;
      const std::string prefix = lhs.substr(0, colon);
      if (std::find(models.begin(), models.end(), prefix) == models.end() &&
          std::find(evaluate.begin(), evaluate.end(), prefix) == evaluate.end())
        throw Error("--input-shape", "\"" + printable(prefix) +
                                         "\" is not one of the models given (MODELS, --evaluate)");
    }
    const std::filesystem::path dir(out_dir);
    const auto make_dir = [&] {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) throw Error(out_dir, "cannot create the output folder: " + ec.message());
    };

    std::vector<tune::GraphSamples> samples;
    json sample_json = json::array();
    for (const auto& path : models) {
      const graph::Model model = load_runnable_model(path);
      tune::GraphBench bench(model, path, shapes_for(path, shape_specs), seed, threads, h);
      tune::sample_configurations(bench, measurements, seed);
      samples.push_back(bench.samples());
      sample_json.push_back({{"model", path},
                             {"space", bench.space().decisions.size()},
                             {"measured", bench.measured()}});
      std::cout << fmt::format("{}: {} configurations measured, {} passed the check\n",
                               printable(path), bench.measured().size(),
                               samples.back().latency_ms.size());
    }
    tune::TrainOptions to;
    to.held_out = held_out;
    to.seed = seed;
    const tune::TrainResult r = tune::train_cost_model(samples, to);
    json saved = tune::train_result_json(r);
    saved["settings"] = {{"measurements", measurements}, {"seed", seed},
                         {"threads", threads},           {"repeats", repeats},
                         {"statistic", statistic},       {"clock", clock},
                         {"tolerance", tolerance},       {"held_out", held_out}};
    std::cout << fmt::format("{:<48} {:>6} {:>9} {:>12}\n", "model", "train", "held out",
                             "Spearman ρ");
    for (const auto& g : r.graphs)
      std::cout << fmt::format("{:<48} {:>6} {:>9} {:>12}\n", printable(g.name), g.train,
                               g.held_out, rho_text(g.spearman));
    std::cout << fmt::format(
        "pooled ρ (all held-out samples together) {}; mean per-model ρ {}; final fit on all {} "
        "samples, loss {:.4f}\n",
        rho_text(r.spearman_pooled), rho_text(r.spearman_mean_per_graph),
        [&] {
          size_t n = 0;
          for (const auto& s : samples) n += s.latency_ms.size();
          return n;
        }(),
        r.loss);

    if (!evaluate.empty()) {
      json ws = json::array();
      tune::GradientOptions go;
      go.anchor = anchor;
      const tune::CostModel cold(tune::feature_names().size());
      std::cout << fmt::format("\nwarm start (gradient method, seed {}, anchor {}):\n", seed,
                               anchor);
      std::cout << fmt::format("{:<40} {:>3} {:>14} {:>14} {:>13} {:>13}\n", "model", "k",
                               "ρ default", "ρ trained", "best default", "best trained");
      for (const auto& path : evaluate) {
        const graph::Model model = load_runnable_model(path);
        tune::GraphBench bench(model, path, shapes_for(path, shape_specs), seed, threads, h);
        tune::sample_configurations(bench, measurements, seed + 1000);
        const tune::GraphSamples pool = bench.samples();
        const auto a = tune::warm_start_curve(bench, pool, cold, ks, seed + 1, go);
        const auto b = tune::warm_start_curve(bench, pool, r.model, ks, seed + 1, go);
        json rows = json::array();
        // k = 0 measures nothing: no best (it printed 0.000 ms).
        auto best_text = [](double ms) {
          return ms > 0 ? fmt::format("{:>10.3f} ms", ms) : fmt::format("{:>13}", "n/a");
        };
        auto best_json = [](double ms) { return ms > 0 ? json(ms) : json(nullptr); };
        for (size_t i = 0; i < a.size(); ++i) {
          std::cout << fmt::format("{:<40} {:>3} {:>9} ({:>2}) {:>9} ({:>2}) {} {}\n",
                                   printable(path), a[i].k, rho_text(a[i].spearman), a[i].held_out,
                                   rho_text(b[i].spearman), b[i].held_out, best_text(a[i].best_ms),
                                   best_text(b[i].best_ms));
          rows.push_back({{"k", a[i].k},
                          {"default",
                           {{"spearman", opt(a[i].spearman)},
                            {"held_out", a[i].held_out},
                            {"best_ms", best_json(a[i].best_ms)}}},
                          {"trained",
                           {{"spearman", opt(b[i].spearman)},
                            {"held_out", b[i].held_out},
                            {"best_ms", best_json(b[i].best_ms)}}}});
        }
        ws.push_back({{"model", path},
                      {"pool", pool.latency_ms.size()},
                      {"curve", rows},
                      {"measured", bench.measured()}});
      }
      make_dir();
      write_file_atomic((dir / "warm_start.json").string(),
                        json{{"anchor", anchor}, {"k", ks}, {"models", ws}}.dump(1));
    }
    if (evaluate.empty()) make_dir();
    write_file_atomic((dir / "samples.json").string(), sample_json.dump(1));
    write_file_atomic((dir / "cost_model.json").string(), saved.dump(1));
    std::cout << "learned parameters: " << printable((dir / "cost_model.json").string()) << "\n";
  });
}

}  // namespace tailor::cli
