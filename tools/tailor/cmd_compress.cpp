// tailor compress: the whole job on one model (include/tailor/compress/compress.h).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <regex>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "tailor/compress/compress.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"

namespace tailor::cli {
namespace {

void print_result(const compress::CompressResult& r) {
  const plan::Plan& p = r.plan;
  std::map<std::string, const compress::LayerRewrite*> forms;
  for (const auto& w : r.rewrites) forms[w.layer] = &w;
  size_t name_w = 5;
  for (const auto& c : p.choices) name_w = std::max(name_w, c.layer.size());
  name_w = std::min<size_t>(name_w, 48);
  // The stage that measured whole plans: a --uniform -gptq run measures only
  // its own plan, to choose its fit.
  const std::string stage = r.plan.solver.rfind("uniform", 0) == 0 && r.guard.size() == 1
                                ? "fit of the -gptq layers"
                                : "uniform guard";
  std::cout << fmt::format("\nplan ({} solver{})\n", p.solver,
                           p.proven_optimal ? ", proven optimal" : "");
  std::cout << fmt::format("  {:<{}}  {:<12} {:>10} {:>12} {:>12}  {}\n", "layer", name_w, "scheme",
                           "rel_error", "dense", "bytes",
                           r.rewrites.empty() ? "" : "model.onnx form");
  std::map<std::string, int64_t> dense;
  for (const auto& l : r.profile.layers) dense[l.name] = l.dense_bytes;
  for (const auto& c : p.choices) {
    const auto it = forms.find(c.layer);
    std::cout << fmt::format("  {:<{}}  {:<12} {:>10.5f} {:>12} {:>12}  {}\n", printable(c.layer),
                             name_w, c.label, c.rel_error, with_commas(dense[c.layer]),
                             with_commas(c.bytes), it != forms.end() ? it->second->form : "");
  }
  std::cout << fmt::format("  total {} of {} dense bytes ({:.1f}%), fixed {} included; budget {}\n",
                           with_commas(p.total_bytes), with_commas(r.profile.dense_bytes),
                           100.0 * p.total_bytes / std::max<int64_t>(1, r.profile.dense_bytes),
                           with_commas(p.fixed_bytes), with_commas(p.budget_bytes));
  {
    // Bits per weight: planned bytes over the planned layers' elements, and
    // all bytes over every weight element (dense_bytes is 4 bytes a weight).
    int64_t planned = 0;
    for (const auto& l : r.profile.layers) planned += l.numel;
    const int64_t weights = r.profile.dense_bytes / 4;
    if (planned > 0 && weights > 0)
      std::cout << fmt::format(
          "  {:.4f} bits per planned weight ({} weights planned), {:.4f} bits per weight of the "
          "model ({} weights; dense f16 would be {} bytes)\n",
          8.0 * static_cast<double>(p.total_bytes - p.fixed_bytes) / static_cast<double>(planned),
          with_commas(planned),
          8.0 * static_cast<double>(p.total_bytes) / static_cast<double>(weights),
          with_commas(weights), with_commas(2 * weights));
  }
  if (!r.guard.empty()) {
    std::cout << fmt::format("\n{} (whole plans on the calibration inputs, {} in {:.1f} s)\n",
                             stage, r.profile.output_metric, r.guard_seconds);
    // damage: over all calibration inputs (KL: the mean over every output
    // row), the statistic the best uniform within the budget is chosen by;
    // bound: the paired 95% upper bound of the mean per-input difference
    // plan − point, one of the evidence compress::plan_holds weighs (the
    // verdict line above names the rest).
    for (size_t i = 0; i < r.guard.size(); ++i)
      std::cout << fmt::format(
          "  {:<28} {:>12} bytes  damage {:.4g}{}{}{}{}\n", r.guard[i].name,
          with_commas(r.guard[i].bytes), r.guard[i].damage,
          interval_text(r.guard[i].interval, " (", ")"),
          (r.guard[i].fit.empty() ? std::string() : " (-gptq fitted " + r.guard[i].fit + ")") +
              (r.guard[i].in_sample.empty()
                   ? std::string()
                   : " (in-sample, not cross-fitted: " + r.guard[i].in_sample + ")"),
          i == 0 ? std::string()
                 : fmt::format("  bound of plan − it {:+.3g}",
                               compress::difference_bound(r.guard[0], r.guard[i])),
          i == r.guard_kept                        ? "  kept"
          : r.guard[i].bytes > r.plan.budget_bytes ? "  over the budget"
                                                   : "");
  }

  const report::Verification& v = r.verification;
  std::cout << fmt::format("\nverification ({} {})\n", v.inputs,
                           r.kind == "llama" ? "predicted positions" : "inputs");
  for (const auto& e : v.outputs)
    std::cout << fmt::format("  output {:<24} rel_error {:.4g}  cosine {:.6f}\n", printable(e.name),
                             e.rel_error, e.cosine);
  if (v.metric)
    std::cout << fmt::format("  {}: original {:.4f}, compressed {:.4f}\n", v.metric->name,
                             v.metric->original, v.metric->compressed);
  if (v.saliency) {
    std::cout << fmt::format(
        "  saliency mask '{}' vs original: mean abs error {:.5f}, IoU (> {}) "
        "{:.5f}\n",
        printable(v.saliency->output), v.saliency->mae, v.saliency->threshold, v.saliency->iou);
    for (const auto& m : v.saliency->inputs)
      std::cout << fmt::format("    {:<28} MAE {:.5f}  IoU {:.5f}\n", printable(m.input), m.mae,
                               m.iou);
  }
  if (v.metric && r.kind == "onnx" && v.metric->name == "OCR character accuracy") {
    std::cout << fmt::format("  lines read exactly: original {} of {}, compressed {} of {}\n",
                             r.ocr_exact_original, v.inputs, r.ocr_exact_compressed, v.inputs);
    if (r.ocr_differences.empty())
      std::cout << "  every line reads the same as with the original model\n";
    for (const auto& d : r.ocr_differences)
      std::cout << fmt::format("  {}: truth \"{}\", original \"{}\", compressed \"{}\"\n",
                               printable(d.file), printable(d.truth), printable(d.original),
                               printable(d.compressed));
  }
  if (r.kld)
    std::cout << fmt::format(
        "  mean KL {:.5f} ± {:.5f} nats (median {:.5f}, p99 {:.5f}), top-1 agreement {:.4f}, "
        "ppl {:.3f} → {:.3f}\n",
        r.kld->mean_kl, r.kld->kl_stderr, r.kld->kl_median, r.kld->kl_p99, r.kld->top1_agreement,
        r.kld->ppl_orig, r.kld->ppl_comp);
  if (!v.damage_metric.empty()) {
    const bool kl = v.damage_metric == "kl";
    std::cout << fmt::format(
        "  output damage ({}): predicted {:.4g} (Σ per-layer D on {}), measured {:.4g} "
        "(verification inputs{}), measured/predicted {}\n",
        kl ? "mean KL of the output distribution, nats"
           : "mean squared relative output error; the output is not a distribution",
        v.predicted_damage, r.profile.calibration.empty() ? "-" : r.profile.calibration,
        v.measured_damage, interval_text(v.measured_interval, ", "),
        v.predicted_damage > 0  // 0 for a plan of dense layers only (--uniform dense)
            ? fmt::format("{:.3g}", v.measured_damage / v.predicted_damage)
            : std::string("n/a (nothing predicted)"));
    // The other prediction compress holds: the written plan run whole on the
    // calibration inputs (the guard's figure), where layers' damages need not
    // add up. Each interval is the spread that the draw of inputs alone gives
    // the figure beside it.
    if (!std::isnan(v.calibration_damage))
      std::cout << fmt::format(
          "  output damage of the written plan run whole on the calibration inputs ({}) {:.4g}{}, "
          "measured/that {}\n",
          fmt::format("{}{}", r.guard.empty() ? "measured after the rewrite" : stage,
                      r.guard_folds > 1
                          ? fmt::format(", -gptq layers cross-fitted in {} folds", r.guard_folds)
                          : ""),
          v.calibration_damage, interval_text(v.calibration_interval, " (", ")"),
          v.calibration_damage > 0  // 0 for a plan of dense layers only (--uniform dense)
              ? fmt::format("{:.3g}", v.measured_damage / v.calibration_damage)
              : std::string("n/a (0 measured)"));
    // Past 2× either way by the draw of inputs alone: no prediction of it can
    // be held to 2× on these inputs.
    auto wide = [](double x, const Interval& i) {
      return !std::isnan(i.low) && (i.high > 2 * x || i.low < 0.5 * x);
    };
    if (wide(v.measured_damage, v.measured_interval) ||
        wide(v.calibration_damage, v.calibration_interval))
      std::cout << fmt::format(
          "  the draw of inputs alone moves a figure above past 2× (its interval): more inputs "
          "narrow it ({})\n",
          r.kind == "llama" ? "--sequences"
                            : "--calib, --inputs for random ones, a recogniser's --ocr-lines "
                              "(bench/compress/ocr_lines.py writes more)");
  }
  if (r.plan.objective != "output")
    std::cout << fmt::format(
        "  predicted error (plan objective '{}', Σ weighted rel_error²) {:.4g}; measured (output "
        "rel_error²) {:.4g}\n",
        r.plan.objective, v.predicted_error, v.measured_error);
  if (!std::isnan(r.standard_vs_tailor_max_abs) && r.kind == "llama")
    std::cout << fmt::format(
        "  model.onnx (standard ops, tailor runtime) vs compressed llama forward: max |Δ| {:.3g}, "
        "max |Δ| / max |logit| {:.3g}\n",
        r.standard_vs_tailor_max_abs, r.standard_vs_tailor_max_rel);
  else if (!std::isnan(r.standard_vs_tailor_max_abs))
    std::cout << fmt::format(
        "  model.onnx (standard ops) vs CompressedLinear/Conv graph, tailor runtime: max |Δ| "
        "{:.3g}\n",
        r.standard_vs_tailor_max_abs);

  if (!p.latency_unit.empty())
    std::cout << fmt::format("  predicted {} {:.4g} of the budget {:.4g}\n",
                             p.latency_unit == "ms" ? "latency (ms, 1 thread)" : "MACs",
                             p.predicted_latency, p.max_latency);
  if (std::isfinite(r.latency_compressed_ms)) {
    // The budget is on the profile's clock (its whole-model latency stands for
    // the original's); the machine's speed may have moved since.
    const double ratio = r.latency_compressed_ms / r.latency_original_ms;
    const double model = r.profile.latency_model_ms.value_or(r.latency_original_ms);
    std::cout << fmt::format(
        "  measured latency (CPU ms, 1 thread, tailor run): original {:.3f}, compressed {:.3f} "
        "({:.3f}× the original); on the profile's clock (original {:.3f}) {:.3f}, {:+.1f}% "
        "against the budget {:.3f}\n",
        r.latency_original_ms, r.latency_compressed_ms, ratio, model, ratio * model,
        100.0 * (ratio * model / p.max_latency - 1), p.max_latency);
  }

  std::cout << fmt::format("\nwrote {}/\n", r.out_dir);
  for (const auto& [name, bytes] : r.file_bytes)
    std::cout << fmt::format("  {:<20} {:>12} bytes\n", name, with_commas(bytes));
  if (r.file_bytes.count("report.html"))
    std::cout << fmt::format("report: {}/report.html\n", r.out_dir);
  std::cout << fmt::format("done in {:.1f} s\n", r.seconds);
}

}  // namespace

void add_compress(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compress",
      "Compress a model to a budget: profile, plan, rewrite (standard ONNX), verify, report");
  static compress::CompressOptions o;
  static std::string schemes;
  static bool no_cache = false, no_guard = false;
  cmd->add_option("MODEL", o.model,
                  "ONNX model, or a llama checkpoint (llama2.c .bin, HF folder, GGUF)")
      ->required();
  cmd->add_option("--budget,-b", o.budget,
                  "Budget for the whole model: 30% (of dense f32), 4.5bpw, 300MB, bytes");
  cmd->add_option("--uniform", o.uniform,
                  "Baseline: one scheme (e.g. int4-g32) wherever it applies, the rest dense; no "
                  "--budget");
  cmd->add_option("--solver,-s", o.solver, "exact (default), greedy, cem, dado or gumbel");
  cmd->add_option("--objective", o.objective,
                  "output (default: measured output damage per layer and candidate on "
                  "calibration inputs verification never sees), numel, sum, or activation "
                  "(llama: mean x² per input channel from sequences the model samples, seed + 2)");
  cmd->add_option("--damage", o.damage,
                  "Output objective's D(layer, candidate): measured (every candidate), fitted "
                  "(2-3 measured probes per layer and scheme family, the rest alpha * rel_error^2) "
                  "or auto (default: fitted above 20M profiled weights)")
      ->check(CLI::IsMember({"auto", "measured", "fitted"}));
  cmd->add_option(
         "--seed", o.seed,
         "Seed of solvers, verification inputs and the damage intervals' draws (default 0)")
      ->check(kUnsigned);
  cmd->add_option("--calib", o.calib_dir,
                  "Folder of verification inputs (one input: every .npy, and .png for an image "
                  "input [1,3,H,W]; several: one subfolder per sample holding <input>.npy)");
  cmd->add_option("--task", o.task,
                  "Task check: auto (default), saliency (first output N×1×H×W: mask MAE and "
                  "IoU), ocr, none")
      ->check(CLI::IsMember({"auto", "saliency", "ocr", "none"}));
  static std::vector<float> mean, stdev;
  cmd->add_option("--image-mean", mean,
                  "R,G,B means (0-255) of .png --calib images (default 128,128,128, IMG.LY ISNet)")
      ->delimiter(',')
      ->expected(3);
  cmd->add_option("--image-std", stdev, "R,G,B std of .png --calib images (default 256,256,256)")
      ->delimiter(',')
      ->expected(3);
  static std::string max_latency;
  static CLI::Option* max_latency_option =
      cmd->add_option("--max-latency", max_latency,
                      "Also a latency budget (ms, CPU time at 1 thread, ONNX), or P% of the "
                      "original's latency measured in the profile: measures every candidate's op, "
                      "plans under both budgets (exact), reports the written model's latency");
  cmd->add_option("--max-macs", o.max_macs,
                  "Also a budget of the planned layers' summed MACs per input row (exact)");
  cmd->add_option("-o,--output", o.out_dir, "Output folder (default <model stem>.tailor)");
  cmd->add_flag("--report", o.report, "Also write report.html and report.json");
  cmd->add_flag("--gguf", o.gguf,
                "llama: also write model.gguf for llama.cpp (schemes dense, q8_0, q4_0)");
  cmd->add_option("--tokenizer", o.tokenizer,
                  "llama2.c tokenizer for --gguf (default tok{vocab}.bin or tokenizer.bin beside "
                  "MODEL)");
  cmd->add_option(
      "--schemes", schemes,
      "Comma-separated scheme labels or families to profile (default: dense, int8, int4, "
      "int3, int4-g32/64/128, ternary, lowrank, gptq; with --max-latency also int8-a8)");
  cmd->add_option("--min-params", o.min_params,
                  "Smaller weights stay dense (default 4096; 0 with --max-latency: a conv's "
                  "time follows its activations, not its weight)");
  cmd->add_option("--threads", o.threads, "Worker threads (0: all cores)")->capture_default_str();
  cmd->add_flag("--no-cache", no_cache, "Do not read or store the profile cache");
  cmd->add_flag("--no-guard", no_guard,
                "Keep the solver's plan even where a uniform scheme within the budget measures "
                "less damage on the calibration inputs");
  cmd->add_option("--ocr-lines", o.ocr_lines,
                  "OCR fixture folder for a PaddleOCR recogniser (default: the fixtures installed "
                  "with tailor, share/tailor/ocr; not the working folder)");
  cmd->add_option("--ocr-keys", o.ocr_keys,
                  "PaddleOCR key file (default ppocr_keys_v1.txt beside the model)");
  cmd->add_option("--inputs", o.random_inputs, "Random verification inputs when none are given")
      ->capture_default_str();
  cmd->add_option("--sequences", o.kld_sequences, "llama: sequences for KL / top-1")
      ->capture_default_str();
  cmd->add_option("--length", o.kld_length, "llama: tokens per sequence")->capture_default_str();
  cmd->callback([] {
    linalg::set_threads(o.threads);
    if (!schemes.empty()) o.schemes = split_scheme_list(schemes);
    for (float v : mean)
      if (!std::isfinite(v)) throw Error("--image-mean", fmt::format("must be finite, got {}", v));
    for (float v : stdev)
      if (!(std::isfinite(v) && v > 0))
        throw Error("--image-std", fmt::format("must be finite and > 0, got {}", v));
    if (!mean.empty()) std::copy(mean.begin(), mean.end(), o.image_mean.begin());
    if (!stdev.empty()) std::copy(stdev.begin(), stdev.end(), o.image_std.begin());
    if (max_latency_option->count() > 0) {
      // "MS" or "P%": a decimal number (no sign but −, no hex, no spaces).
      static const std::regex number(R"(-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)");
      const bool percent = !max_latency.empty() && max_latency.back() == '%';
      const std::string digits =
          percent ? max_latency.substr(0, max_latency.size() - 1) : max_latency;
      if (!std::regex_match(digits, number))
        throw Error("--max-latency",
                    "expected milliseconds (30) or a percentage of the original's latency (70%), "
                    "got \"" +
                        max_latency + "\"");
      const double v = std::strtod(digits.c_str(), nullptr);  // ±HUGE_VAL past the range
      (percent ? o.max_latency_fraction : o.max_latency) = percent ? v / 100 : v;
    }
    o.cache = !no_cache;
    o.uniform_guard = !no_guard;
    const auto t0 = std::chrono::steady_clock::now();
    o.progress = [t0](const std::string& stage, const std::string& msg) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << fmt::format("[{:6.1f}s] {:<8} {}\n", s, stage, msg) << std::flush;
    };
    print_result(compress::compress_model(o));
  });
}

}  // namespace tailor::cli
