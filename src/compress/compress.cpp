// The `tailor compress` pipeline (compress.h).
#include "tailor/compress/compress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <regex>
#include <set>

#include "compress/guard_run.h"
#include "compress/verify.h"
#include "tailor/compress/damage_fit.h"
#include "tailor/compress/gguf_out.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/compress/sequential_gptq.h"
#include "tailor/core/error.h"
#include "tailor/core/warning.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/load_model.h"
#include "tailor/io/onnx.h"
#include "tailor/io/safetensors.h"
#include "tailor/io/sha256.h"
#include "tailor/llm/calib.h"
#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"
#include "tailor/plan/budget.h"
#include "tailor/plan/two_budget.h"
#include "tailor/profile/latency.h"
#include "tailor/profile/profile_cache.h"
#include "tailor/profile/profiler.h"
#include "tailor/runtime/calibration.h"

namespace tailor::compress {
namespace fs = std::filesystem;

namespace {

/// Rounds of measure_fitted_picks before compress keeps the plan it has.
constexpr int kPickRounds = 8;

using Clock = std::chrono::steady_clock;

/// An existing `out` is replaced only when it is a folder holding nothing
/// but the files compress writes (a previous run's output): never a file,
/// and never a folder of other files (e.g. `-o .` or a home folder). A
/// symlink to such a folder is followed (StagedFolder replaces the folder it
/// points to and keeps the link).
void refuse_foreign(const fs::path& out) {
  std::error_code ec;
  const auto st = fs::status(out, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw Error(out.string(), "-o: exists and is not a folder; give another output folder");
  static const std::set<std::string> ours = {"model.onnx",  "weights.safetensors", "plan.json",
                                             "report.html", "report.json",         "model.gguf"};
  for (const auto& e : fs::directory_iterator(out, ec))
    if (!e.is_regular_file() || !ours.count(e.path().filename().string()))
      throw Error(out.string(),
                  "-o: the folder exists and holds '" + e.path().filename().string() +
                      "', not only a previous compress output; give another output folder");
  if (ec) throw Error(out.string(), "-o: cannot list the existing folder: " + ec.message());
}

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

/// Runs per model when compress times whole plans against the original:
/// about 1.5 s of each (9 to 60 runs by the profile's whole-model latency),
/// since a median of 9 moved the recogniser's ratio by 0.1 between two
/// measurements of one plan on a loaded machine.
LatencyOptions whole_model_latency_options(std::optional<double> model_ms) {
  const double ms = model_ms.value_or(100.0);
  return {1, static_cast<int>(std::clamp(1500.0 / std::max(ms, 1e-3), 9.0, 60.0))};
}

/// weights.safetensors: planned factors, dense planned layers and every other weight.
void write_weights(const std::string& path, const graph::Model& mf, const plan::Plan& plan,
                   const std::vector<EncodedLayer>& layers) {
  std::vector<NamedTensor> tensors;
  std::map<std::string, const EncodedLayer*> encoded;
  for (const EncodedLayer& l : layers) encoded[l.name] = &l;
  for (const graph::WeightView& w : graph::weights(mf)) {
    if (auto it = encoded.find(w.name); it != encoded.end()) {
      for (const schemes::Factor& f : it->second->encoded->factors())
        tensors.push_back({w.name + "." + f.name, f.tensor});
      continue;
    }
    const bool planned = std::any_of(plan.choices.begin(), plan.choices.end(),
                                     [&](const plan::PlanChoice& c) { return c.layer == w.name; });
    if (w.tensor.dtype() == DType::boolean) continue;
    tensors.push_back({planned ? w.name + ".w" : w.name, w.tensor});
  }
  write_safetensors(
      path, tensors,
      {{"format", "tailor-compressed"}, {"model", mf.source}, {"plan", plan::plan_to_json(plan)}});
}

/// Σ_ℓ D(ℓ, c_ℓ) of `plan` over `profile` (NaN when a choice has no damage).
double predicted_damage(const ModelProfile& profile, const plan::Plan& plan) {
  double sum = 0;
  for (const plan::PlanChoice& choice : plan.choices)
    for (const LayerProfile& l : profile.layers)
      if (l.name == choice.layer)
        for (const Candidate& c : l.candidates)
          if (c.label == choice.label)
            sum += c.output_damage ? *c.output_damage : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

}  // namespace

const std::vector<std::string>& default_schemes() {
  static const std::vector<std::string> s{"dense",    "int8",      "int4",    "int3",    "int4-g32",
                                          "int4-g64", "int4-g128", "ternary", "lowrank", "gptq"};
  return s;
}

CompressResult compress_model(const CompressOptions& o) {
  const auto t_start = Clock::now();
  auto stage_start = t_start;
  auto say = [&](const std::string& stage, const std::string& msg) {
    if (o.progress) o.progress(stage, msg);
  };
  auto begin = [&](const std::string& stage, const std::string& msg) {
    stage_start = Clock::now();
    say(stage, msg);
  };
  auto done = [&](const std::string& stage, const std::string& msg) {
    const double s = std::chrono::duration<double>(Clock::now() - stage_start).count();
    say(stage, fmt::format("{} ({:.2f} s)", msg, s));
  };

  CompressResult r;
  if (o.uniform.empty() && o.budget.empty())
    throw Error("--budget", "give a budget (30%, 4.5bpw, 300MB, bytes) or --uniform LABEL");
  if (!o.uniform.empty() && !o.budget.empty())
    throw Error("--uniform", "takes no --budget: the plan's bytes are the scheme's");
  const plan::Budget budget = o.uniform.empty() ? plan::parse_budget(o.budget) : plan::Budget{};
  const plan::Objective objective = plan::parse_objective(o.objective);
  // --max-latency in ms, or (max_latency_fraction) a fraction of the
  // original's latency, known once the profile has measured it.
  const bool latency_budget = o.max_latency || o.max_latency_fraction;
  std::optional<double> max_latency = o.max_latency;
  const bool second_budget = latency_budget || o.max_macs;
  if (second_budget && !o.uniform.empty())
    throw Error(latency_budget ? "--max-latency" : "--max-macs", "not with --uniform");
  if (second_budget && o.solver != "exact")
    throw Error(
        "--solver",
        "only exact plans under two budgets (--max-latency, --max-macs); got \"" + o.solver + "\"");
  if (latency_budget && o.max_macs)
    throw Error("--max-macs", "not with --max-latency: give one second budget");
  if (o.max_latency && o.max_latency_fraction)
    throw Error("--max-latency", "give it in ms or as a percentage, not both");
  if (o.max_latency && !(std::isfinite(*o.max_latency) && *o.max_latency > 0))
    throw Error("--max-latency", fmt::format("must be finite and > 0 ms, got {}", *o.max_latency));
  if (o.max_latency_fraction &&
      !(std::isfinite(*o.max_latency_fraction) && *o.max_latency_fraction > 0))
    throw Error("--max-latency", fmt::format("must be a finite percentage > 0, got {}%",
                                             100 * *o.max_latency_fraction));
  if (o.max_macs && *o.max_macs <= 0)
    throw Error("--max-macs", fmt::format("must be > 0, got {}", *o.max_macs));
  {
    const auto& names = plan::solver_names();
    if (std::find(names.begin(), names.end(), o.solver) == names.end())
      throw Error("--solver",
                  "unknown solver '" + o.solver + "' (exact, greedy, cem, dado, gumbel)");
  }

  // Task files given explicitly must exist (checked before any work).
  if (!o.ocr_lines.empty() && !fs::is_regular_file(fs::path(o.ocr_lines) / "labels.tsv"))
    throw Error(o.ocr_lines, "--ocr-lines: not an OCR fixture folder (no labels.tsv in it)");
  if (!o.ocr_keys.empty() && !fs::is_regular_file(o.ocr_keys))
    throw Error(o.ocr_keys, "--ocr-keys: no such file");

  // 1. load
  begin("load", o.model);
  const graph::Model mf = load_model(o.model);
  std::optional<LlamaCheckpoint> ck;
  // The decoder graph of a llama checkpoint (the file read once).
  std::optional<graph::Model> llama = llama_decoder(mf, o.model, &ck);
  r.kind = llama ? "llama" : "onnx";
  // --gguf: a llama checkpoint, its tokenizer and GGUF-storable schemes (checked before any work).
  std::optional<Llama2cTokenizer> gguf_tokenizer;
  if (o.gguf) {
    if (!ck)
      throw Error(o.model, "--gguf: not a llama checkpoint (" + mf.format +
                               "); model.gguf needs a llama2.c, Hugging Face llama or GGUF llama "
                               "checkpoint");
    gguf_tokenizer = load_llama_tokenizer(o.model, o.tokenizer, ck->config.vocab_size);
    for (const std::string& s : o.uniform.empty() ? o.schemes : std::vector{o.uniform})
      if (!ggml_type_of(s))
        throw Error("--gguf", "scheme '" + s + "' has no ggml type (dense, q8_0, q4_0)");
  }
  // Options that would otherwise be accepted and ignored.
  if (ck && latency_budget)
    throw Error("--max-latency", "applies to ONNX models (latencies are measured per ONNX op)");
  if (ck && !o.calib_dir.empty())
    throw Error("--calib",
                "applies to ONNX models; a llama checkpoint is verified on sequences "
                "sampled from itself (--sequences, --length)");
  if (!o.gguf && !o.tokenizer.empty())
    throw Error("--tokenizer", "applies only with --gguf (the tokenizer written into model.gguf)");
  std::string out_dir = o.out_dir;
  if (out_dir.empty()) out_dir = fs::path(o.model).filename().stem().string() + ".tailor";
  refuse_foreign(fs::absolute(out_dir).lexically_normal());  // before any work
  done("load", fmt::format("{} ({}), {} weights", o.model, r.kind, graph::weights(mf).size()));

  // 1b. calibration statistics of a llama checkpoint: per Linear, the
  // per-input-channel mean x² over sequences sampled from the model itself
  // (seed + 2; verification samples with seed + 1, so the KL is measured on
  // held-out sequences).
  std::string calib_path;
  struct RemoveFile {
    std::string path;
    ~RemoveFile() {
      std::error_code ec;
      if (!path.empty()) fs::remove(path, ec);
    }
  } calib_cleanup;
  if (llama && objective == plan::Objective::activation) {
    begin("calibrate", "");
    llm::CompareOptions co;
    co.seed = o.seed + 2;
    co.sequences = o.kld_sequences;
    co.length = kld_length(o, *llama);
    const auto seqs = llm::sample_sequences(*llama, co);
    const auto stats = llm::collect_input_stats(*llama, seqs);
    calib_path =
        (fs::temp_directory_path() / fmt::format("tailor-calib-{}-{}.safetensors", ::getpid(),
                                                 reinterpret_cast<uintptr_t>(&calib_cleanup)))
            .string();
    llm::write_calibration(calib_path, stats);
    calib_cleanup.path = calib_path;
    done("calibrate", fmt::format("mean x² of {} linear inputs over {} sequences × {} tokens",
                                  stats.size(), co.sequences, co.length + 1));
  }

  // 2. profile (cached)
  begin("profile", "");
  ProfileOptions po = compress_profile_options(o, llama ? &*llama : nullptr, calib_path);
  // 2a. calibration inputs of the output objective (never verification's),
  // and the source of their Grams XᵀX, which give every layer its -gptq
  // candidates (computed as they are needed, below). The cache key holds the
  // calibration set (damage_key): D and the Grams both come from it.
  std::optional<OutputObjective> output;
  if (objective == plan::Objective::output) {
    output = prepare_output_objective(mf, llama ? &*llama : nullptr, o, po, /*lazy_grams=*/true);
  }
  const Calibration* calibration = output ? &output->calibration : nullptr;
  // Computed as they are needed: every layer's to profile (a cache miss), else
  // only those of the -gptq layers the plans pick.
  GramSource grams = output ? output->grams : GramSource{};
  // 2b. the latency input: the first calibration input (never verification's).
  std::map<std::string, Tensor> latency_input;
  const LatencyOptions latency_options{1, 9};
  LatencyOptions whole_model_options = latency_options;  // the plans against the original
  if (latency_budget) {
    std::optional<Calibration> own;
    const Calibration& lc = calibration ? *calibration : own.emplace(onnx_calibration(mf, o));
    latency_input = lc.inputs.at(0);
    po.latency_key = latency_key(latency_input, latency_options);
    // Latencies scale with the input: on a guessed shape the budget means little
    // (the detector's ops at 64×64 take 1 ms, at 640×640 50 ms).
    if (lc.guessed_shape)
      warn("--max-latency", "latencies measured on a random input of a guessed shape (" +
                                po.latency_key +
                                "); give --calib inputs of the shape the model runs on");
  }
  std::string key;
  std::optional<ModelProfile> cached;
  if (o.cache) {
    key = profile_cache_key(o.model, po);
    cached = load_cached_profile(key);
  }
  r.profile_cached = cached.has_value();
  if (!cached) po.grams = grams.all();
  r.profile = cached ? *cached : profile_model(mf, po);
  r.profile.model = o.model;
  // The cache is keyed by the inputs' contents, not their place: a hit names
  // the inputs this run read, not those of the run that stored it.
  if (calibration && cached) r.profile.calibration = calibration->description;
  if (calibration && !cached) {
    const auto t0 = Clock::now();
    std::vector<size_t> all(r.profile.layers.size());
    std::iota(all.begin(), all.end(), size_t{0});
    measure_profile_damage(llama ? *llama : mf, *output, po, r.profile, all, all.size());
    r.damage_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  if (latency_budget && !cached) {
    const auto t0 = Clock::now();
    measure_latencies(mf, latency_input, r.profile, latency_options);
    say("profile", fmt::format("latencies of every candidate measured in {:.2f} s ({}); model "
                               "{:.3f} ms, rest {:.3f} ms",
                               std::chrono::duration<double>(Clock::now() - t0).count(),
                               r.profile.latency_input, *r.profile.latency_model_ms,
                               *r.profile.latency_rest_ms));
  }
  if (o.cache && !cached) store_cached_profile(key, r.profile);
  if (o.max_latency_fraction) {
    if (!r.profile.latency_model_ms)
      throw Error(o.model,
                  "--max-latency as a percentage: the profile holds no whole-model latency");
    max_latency = *o.max_latency_fraction * *r.profile.latency_model_ms;
    say("profile",
        fmt::format("--max-latency {:.4g}% of the original's {:.4g} ms: {:.4g} ms",
                    100 * *o.max_latency_fraction, *r.profile.latency_model_ms, *max_latency));
  }
  const size_t profiled_grams = po.grams.size();
  po.grams.clear();  // `grams` alone holds them until the plan is made
  r.gram_seconds = grams.seconds();
  if (const std::string fits = damage_fit_summary(r.profile); !fits.empty()) say("profile", fits);
  done("profile",
       fmt::format("{} layers, dense {} bytes{}{}", r.profile.layers.size(), r.profile.dense_bytes,
                   cached ? ", from the profile cache" : "",
                   calibration
                       ? fmt::format("; {}output damage ({}) on {}{}",
                                     cached || r.gram_seconds == 0
                                         ? std::string()
                                         : fmt::format("Grams of {} layers in {:.2f} s; ",
                                                       profiled_grams, r.gram_seconds),
                                     r.profile.output_metric, r.profile.calibration,
                                     cached ? "" : fmt::format(" in {:.2f} s", r.damage_seconds))
                       : std::string()));

  // 3. plan
  begin("plan", "");
  int64_t budget_bytes = 0;
  if (!o.uniform.empty()) {
    r.plan = uniform_plan(r.profile, o.uniform, objective, o.seed, o.model);
    budget_bytes = r.plan.budget_bytes;
  } else {
    budget_bytes = plan::budget_bytes(budget, r.profile);
    plan::Problem problem = plan::make_problem(r.profile, objective, budget_bytes, o.model);
    plan::check_feasible(problem);
    plan::add_second_budget(problem, r.profile, max_latency, o.max_macs);
    plan::SolveOptions so;
    so.seed = o.seed;
    so.threads = o.threads;
    auto solve = [&] { return plan::solve_plans(r.profile, problem, {o.solver}, so, objective); };
    // The solver's plan at a latency budget (ms in the solver's units; none:
    // the --max-latency budget or none), then, under the output objective,
    // each pick of fitted D measured and the plan re-solved (fitted D can be
    // far below a candidate's measured damage) until none is left.
    auto measured_solve = [&](std::optional<double> latency_target) {
      auto resolve = [&] {
        problem = plan::make_problem(r.profile, objective, budget_bytes, o.model);
        plan::add_second_budget(problem, r.profile, max_latency, o.max_macs);
        if (latency_target) problem.latency_budget = *latency_target - problem.fixed_latency;
        return solve().front();
      };
      plan::Plan p = resolve();
      if (!output) return p;
      MeasuredPicks m = measure_fitted_picks(llama ? *llama : mf, *output, po, grams, r.profile,
                                             std::move(p), resolve, kPickRounds);
      for (size_t i = 0; i < m.rounds.size(); ++i) {
        const PickRound& pr = m.rounds[i];
        say("plan",
            fmt::format(
                "{}round {}: measured the plan's {} picks of fitted D, Σ D {:.4g} "
                "fitted, {:.4g} measured{}, in {:.1f} s; re-solved: objective "
                "{:.4g} → {:.4g}",
                !latency_target ? std::string()
                : *latency_target < plan::kUnboundedLatency
                    ? fmt::format("at {:.4g} ms, ", *latency_target)
                    : std::string("without the latency budget, "),
                i + 1, pr.fitted_picks, pr.fitted_sum, pr.measured_sum,
                pr.fitted_sum > 0 ? fmt::format(" ({:.3g}×)", pr.measured_sum / pr.fitted_sum) : "",
                pr.seconds, pr.objective_before, pr.objective_after));
      }
      if (m.fitted_left > 0)
        warn("plan", fmt::format("{} of the plan's picks still hold fitted D after {} rounds of "
                                 "measuring them",
                                 m.fitted_left, kPickRounds));
      return std::move(m.plan);
    };
    if (max_latency && !llama) {
      // Held to the budget by measuring each plan against the original.
      whole_model_options = whole_model_latency_options(r.profile.latency_model_ms);
      const graph::Model before = runnable_model(mf);
      const double least = plan::least_latency(problem, so);
      const plan::CalibratedPlan c = plan::latency_calibrated_plan(
          *max_latency, r.profile.latency_model_ms.value_or(least), least,
          [&](double target) { return measured_solve(target); },
          [&](const plan::Plan& p) {
            const graph::Model after = runnable_model(
                rewrite_standard(mf, encode_plan(mf, p, po.scheme_defaults, 0x7a11, o.threads,
                                                 grams.get(gram_weights(p)))));
            const std::vector<double> ms =
                interleaved_latency_ms({&before, &after}, latency_input, whole_model_options);
            return std::make_pair(ms[0], ms[1]);
          },
          o.model, budget_bytes);
      for (size_t i = 0; i < c.rounds.size(); ++i) {
        const plan::LatencyRound& lr = c.rounds[i];
        say("plan", fmt::format("latency round {}: solver budget {:.3f} ms, predicted {:.3f} ms, "
                                "measured {:.3f} ms against the original's {:.3f} ({:.3f}×): "
                                "{:.3f} ms on the profile's clock, budget {:.3f}",
                                i + 1, lr.target, lr.predicted, lr.plan_ms, lr.original_ms,
                                lr.plan_ms / lr.original_ms, lr.on_profile_clock, *max_latency));
      }
      r.plan = c.plan;
      r.plan.max_latency = *max_latency;
    } else {
      r.plan = measured_solve(std::nullopt);
    }
  }
  done("plan",
       fmt::format("{}: {} of {} bytes ({} of dense), objective {:.3g}", o.solver,
                   r.plan.total_bytes, budget_bytes,
                   percent(r.plan.total_bytes, r.profile.dense_bytes), r.plan.objective_value));

  if (const double profiled = r.gram_seconds; grams.seconds() > profiled)
    say("plan", fmt::format("Grams of the -gptq layers the plan's rounds measured in {:.2f} s",
                            grams.seconds() - profiled));
  r.gram_seconds = grams.seconds();
  // Encoding reads none of them: freed here, and no source is left pointing
  // at the decoder graph moved below.
  grams = GramSource{};
  if (output) output->grams = GramSource{};

  // -gptq layers sequentially, against the original's products on `in`; the
  // decoder graph holds every linear as an f32 [out, in] initializer read by
  // Gemm(transB = 1), half-precision checkpoints widened.
  double gptq_seconds = 0;
  auto encode_on = [&](const plan::Plan& p, const std::vector<std::map<std::string, Tensor>>& in,
                       GptqFit fit) {
    const auto t0 = Clock::now();
    std::vector<EncodedLayer> l =
        encode_plan_sequential(mf, llama ? *llama : mf, p, po.scheme_defaults, 0x7a11, o.threads,
                               in, llama ? std::optional<DType>(DType::f32) : std::nullopt, fit);
    if (!gram_weights(p).empty())
      gptq_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    return l;
  };
  std::optional<std::vector<EncodedLayer>> guarded;
  if (calibration && o.uniform.empty() && o.uniform_guard && !second_budget) {
    begin("guard", "");
    guarded =
        run_guard(llama ? *llama : mf, *calibration, r, budget_bytes, o, objective, encode_on);
    // What `damage` is: KL's mean over every output row of the calibration
    // inputs; relative error's Σ‖y − ŷ‖² / Σ‖y‖² over them all.
    const std::string metric =
        std::string(damage_metric_name(calibration->metric)) +
        (calibration->metric == DamageMetric::relative_error ? " (all inputs pooled)" : " (mean)");
    done("guard",
         guard_verdict(r.guard, r.guard_kept, budget_bytes, metric, r.guard_folds) +
             (std::isnan(r.plan_damage_per_layer)
                  ? std::string()
                  : fmt::format("; the plan with its -gptq layers fitted sequentially {:.4g}, "
                                "per layer {:.4g} (GptqFit): it is measured at the lower",
                                r.plan_damage_sequential, r.plan_damage_per_layer)));
  } else if (calibration && !o.uniform.empty() && o.uniform_guard && !second_budget &&
             !gram_weights(r.plan).empty() &&
             cross_fit_folds(calibration->inputs.size(), kGuardFolds) > 1) {
    // A uniform -gptq file: its fit (GptqFit) chosen as the guard chooses a
    // plan's, cross-fitted.
    begin("fit", "");
    guarded = run_guard(llama ? *llama : mf, *calibration, r, budget_bytes, o, objective, encode_on,
                        false);
    done("fit", fmt::format("-gptq layers fitted sequentially {:.4g}, per layer {:.4g} "
                            "(cross-fitted {}, {} folds): written {}",
                            r.plan_damage_sequential, r.plan_damage_per_layer,
                            damage_metric_name(calibration->metric), r.guard_folds, r.gptq_fit));
  }

  // 4. rewrite
  begin("rewrite", "");
  std::vector<EncodedLayer> layers =
      guarded ? std::move(*guarded)
              : encode_on(r.plan,
                          calibration ? calibration->inputs
                                      : std::vector<std::map<std::string, Tensor>>{},
                          GptqFit::sequential);
  if (gptq_seconds > 0)
    say("rewrite",
        fmt::format("-gptq layers fitted {} (GptqFit; sequential: in schedule order against the "
                    "original's products); GPTQ encodings of the guard and the file in {:.2f} s",
                    r.gptq_fit, gptq_seconds));
  std::optional<graph::Model> standard, tailor_graph, original;
  if (llama) {
    original = std::move(*llama);
    standard = rewrite_standard(*original, layers, &r.rewrites);
    tailor_graph = graph::recognise_compressed_weights(*standard, {});
    done("rewrite", fmt::format("{} linears: standard ONNX decoder graph verified, compressed "
                                "forms recognised",
                                layers.size()));
  } else {
    check_onnx_support(mf);  // the runtime runs both graphs
    original = mf;
    standard = rewrite_standard(*original, layers, &r.rewrites);
    tailor_graph = graph::recognise_compressed_weights(*standard, {});
    done("rewrite",
         fmt::format("{} layers: standard ONNX graph verified, compressed forms recognised",
                     layers.size()));
  }

  // 5. write (staged)
  begin("write", "");
  StagedFolder staging(out_dir);
  r.out_dir = staging.target().string();
  if (standard) graph::write_onnx(*standard, staging.file("model.onnx"));
  write_weights(staging.file("weights.safetensors"), mf, r.plan, layers);
  plan::write_plan(staging.file("plan.json"), r.plan);
  if (o.gguf) write_llama_gguf(staging.file("model.gguf"), *ck, layers, *gguf_tokenizer);
  done("write", o.gguf ? "model files and model.gguf staged" : "model files staged");

  // 6. verify
  begin("verify", "");
  if (r.kind == "llama") {
    r.verification = verify_llama(*original, *tailor_graph, staging.file("model.onnx"), o, r);
  } else {
    r.verification = verify_onnx(*original, *tailor_graph, staging.file("model.onnx"), o, r);
  }
  r.verification.predicted_error = r.plan.objective_value;
  r.verification.predicted_damage = predicted_damage(r.profile, r.plan);
  // The written plan run whole on the calibration inputs: the guard's figure
  // for the plan it kept (-gptq layers cross-fitted), else measured here for a
  // plan without -gptq layers. A -gptq plan the guard did not measure stays
  // NaN: fitted to the inputs it is scored on, its figure would flatter it.
  if (!r.guard.empty()) {
    r.verification.calibration_damage = r.guard[r.guard_kept].damage;
    r.verification.calibration_interval = r.guard[r.guard_kept].interval;
  } else if (calibration && gram_weights(r.plan).empty()) {
    const PlanDamage meter(*original, calibration->inputs, calibration->metric,
                           calibration->outputs, o.threads);
    std::vector<DamageMeter> per_input;
    r.verification.calibration_damage = meter.measure(layers, nullptr, &per_input);
    r.verification.calibration_interval = damage_interval(per_input, o.seed);
  }
  {
    std::string msg = fmt::format("{} inputs", r.verification.inputs);
    if (r.kind != "llama")
      msg += fmt::format(" (original {:.1f} s, compressed {:.1f} s)", r.original_seconds,
                         r.compressed_seconds);
    for (const auto& e : r.verification.outputs)
      msg += fmt::format("; {}: rel {:.3g}, cos {:.6f}", e.name, e.rel_error, e.cosine);
    if (!r.verification.damage_metric.empty())
      msg += fmt::format("; output damage ({}) predicted {:.4g}, measured {:.4g}",
                         r.verification.damage_metric, r.verification.predicted_damage,
                         r.verification.measured_damage);
    if (r.verification.metric)
      msg += fmt::format("; {} {:.4f} → {:.4f}", r.verification.metric->name,
                         r.verification.metric->original, r.verification.metric->compressed);
    done("verify", msg);
  }

  // 6b. latency of the written model against the original's, as `tailor run` runs them.
  if (max_latency) {
    begin("latency", "");
    const graph::Model before = runnable_model(mf);
    const graph::Model after = runnable_model(load_runnable_model(staging.file("model.onnx")));
    const std::vector<double> ms =
        interleaved_latency_ms({&before, &after}, latency_input, whole_model_options);
    r.latency_original_ms = ms[0];
    r.latency_compressed_ms = ms[1];
    done("latency", fmt::format("original {:.3f} ms, compressed {:.3f} ms (predicted {:.3f}, "
                                "budget {:.3f})",
                                ms[0], ms[1], r.plan.predicted_latency, *max_latency));
  }

  // 7. report
  if (o.report) {
    begin("report", "curve, solver comparison, plots");
    plan::StudyOptions so;
    so.time_limit_s = o.report_time_limit;
    so.threads = o.threads;
    const plan::PlanStudy study = plan::study_plan(r.profile, r.plan, "plan", so);
    report::Report rep = report::make_report(r.profile, r.plan, "plan", study, r.verification);
    if (!r.guard.empty()) rep.measured_metric = r.profile.output_metric;
    for (size_t i = 0; i < r.guard.size(); ++i)
      rep.measured.push_back({r.guard[i].name, r.guard[i].bytes, r.guard[i].damage,
                              i == r.guard_kept, r.guard[i].in_sample, r.guard[i].interval});
    rep.latency_original_ms = r.latency_original_ms;
    rep.latency_compressed_ms = r.latency_compressed_ms;
    report::write_report(staging.file(""), rep);
    done("report", "report.html, report.json");
  }

  staging.commit();
  for (const auto& e : fs::directory_iterator(staging.target()))
    if (e.is_regular_file())
      r.file_bytes[e.path().filename().string()] = static_cast<int64_t>(e.file_size());
  r.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  return r;
}

}  // namespace tailor::compress
