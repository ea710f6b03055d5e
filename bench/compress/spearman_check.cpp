// Does the output objective order plans of equal bytes as the measured
// output does, and how well does the scalable (fitted) damage predict the
// measured one? (issue 13, items 1 and 2). On any model compress takes:
//
//   spearman_check MODEL LABEL [RANDOM] [--calib DIR | --ocr-lines DIR] [--singles N]
//                  [--damage MODE] [--context]
//
// --damage fitted (or auto): the profile compress itself plans with on a
// large model (ISNet: its probes measured, the other candidates α·e²), read
// from the cache a `tailor compress --calib DIR` run left. Each plan's picks
// of fitted D are then measured as compress measures them
// (measure_fitted_picks; a solver's plan re-solved until none is left, as
// compress's rounds do), so "predicted" is what compress would predict for
// that plan, and "pred fitted" is Σ D of the profile as read, before any
// pick was measured. The fit errors and the "exact (fitted)" plan are left
// out. Default measured.
//
// The profile is compress's own (compress_model with --uniform LABEL, the
// default catalog, the output objective with every candidate measured,
// --damage measured; read from the profile cache when it holds it). The
// fitted profile is the same with fit_layer_damage applied to every layer:
// the probes keep their measured D, the other candidates get α·e², exactly
// what `--damage fitted` stores (its probes are measured with the same seeds
// and inputs). Printed first: the fitted damage's error on the held-out
// candidates (fitted / measured, per family and over all).
//
// The budget B is uniform LABEL's total bytes. Plans at B: the five solvers
// under the output objective (measured D), exact under the fitted D, exact
// under the weight-error objectives (numel, sum), uniform LABEL and
// LABEL-gptq, and RANDOM (default 10) random feasible perturbations of the
// exact plan (seeded; a few layers moved to a random candidate, then random
// layers moved to cheaper candidates until the plan fits, kept when it takes
// at least 95% of B's planned bytes). Each plan is encoded as compress
// encodes it (encode_plan with the calibration Grams) and measured whole
// (PlanDamage: every planned weight replaced by its decoded stored form) on
// the inputs compress verifies on (verification_inputs: odd OCR lines or
// --calib inputs, llama sequences sampled with seed + 1), in the calibration
// metric, and also on the calibration inputs D came from (so that
// interactions between layers show apart from the change of inputs).
// Prints one row per plan (predicted Σ D measured and fitted, measured),
// Spearman's ρ of each prediction vs measured (average ranks for
// ties) over all plans and over the random ones, and the predicted/measured
// ratios (min, median, max).
//
// --context (measured damage only): a third prediction, damage in context
// (compress/damage_context.h) around the first plan, exact's under the
// output objective: its whole damage on the calibration inputs plus each
// layer's marginal around it, every candidate measured again in that
// plan's model. Printed as "ctx pred" beside each plan, with its Spearman ρ
// and ratios. At the context plan itself "ctx pred" is its whole damage on
// the calibration inputs with -gptq layers cross-fitted, where "meas calib"
// encodes them with every calibration input's Gram (in-sample), so the two
// differ for a plan with -gptq layers. A first-order sum below 0 (far from
// the context) is printed as 0. --ocr-lines DIR: a recogniser's OCR lines (compress's
// --ocr-lines), calibration on the even ones, measured on the odd ones.
//
// --singles N: does Σ D add up? For the N layers of largest D at LABEL, on
// the calibration inputs: the plan taking LABEL at that layer alone,
// measured whole (for a round-to-nearest LABEL it should equal D: the
// single-layer damage by its definition, not the suffix re-run; a -gptq D
// is cross-fitted, these runs are not), and uniform LABEL without that
// layer.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>

#include "tailor/compress/compress.h"
#include "tailor/compress/damage_context.h"
#include "tailor/compress/damage_fit.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/io/load_model.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/problem.h"
#include "tailor/plan/sweep.h"

using namespace tailor;

namespace {

/// Ranks 1..n of `v`, ties sharing their average rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * double(i + j) + 1.0;
    i = j + 1;
  }
  return r;
}

/// Spearman's ρ: Pearson's correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

struct Named {
  std::string name;
  bool random = false;
  plan::Choice choice;
};

/// The choice taking `label` wherever a layer has it, dense elsewhere (empty
/// when no layer has it).
plan::Choice uniform_choice(const ModelProfile& profile, const std::string& label) {
  plan::Choice c;
  bool any = false;
  for (const LayerProfile& l : profile.layers) {
    int pick = -1, dense = 0;
    for (size_t k = 0; k < l.candidates.size(); ++k) {
      if (l.candidates[k].label == label) pick = static_cast<int>(k);
      if (l.candidates[k].label == "dense") dense = static_cast<int>(k);
    }
    any = any || pick >= 0;
    c.push_back(pick >= 0 ? pick : dense);
  }
  return any ? c : plan::Choice{};
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}

/// The fitted damage's error on the held-out candidates: fitted / measured.
void print_fit_errors(const ModelProfile& measured, const ModelProfile& fitted) {
  std::map<std::string, std::vector<double>> ratios;  // per family, and "all"
  std::vector<double> factors;
  for (size_t l = 0; l < measured.layers.size(); ++l) {
    for (const DamageFit& f : fitted.layers[l].damage_fits) factors.push_back(f.fit_factor);
    for (size_t c = 0; c < measured.layers[l].candidates.size(); ++c) {
      const Candidate& m = measured.layers[l].candidates[c];
      const Candidate& f = fitted.layers[l].candidates[c];
      if (!f.output_damage_fitted) continue;
      const double r = std::max(*f.output_damage, 1e-12) / std::max(*m.output_damage, 1e-12);
      ratios[compress::damage_family(m.label)].push_back(r);
      ratios["all"].push_back(r);
    }
  }
  if (factors.empty()) {
    fmt::print("fitted damage: no layer has a family of 4 or more candidates\n");
    return;
  }
  fmt::print(
      "fit factor on the probes (max(fit/D, D/fit) per fit): median {:.3f}, 90% {:.3f}, "
      "max {:.3f} over {} fits\n",
      quantile(factors, 0.5), quantile(factors, 0.9), quantile(factors, 1.0), factors.size());
  fmt::print(
      "held-out candidates, fitted / measured D:\n{:<10} {:>5} {:>8} {:>8} {:>8} {:>8} "
      "{:>8} {:>10}\n",
      "family", "n", "min", "10%", "median", "90%", "max", "in 0.5-2x");
  for (const auto& [family, r] : ratios) {
    const auto within =
        std::count_if(r.begin(), r.end(), [](double x) { return x >= 0.5 && x <= 2.0; });
    fmt::print("{:<10} {:>5} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>9.0f}%\n", family,
               r.size(), quantile(r, 0), quantile(r, 0.1), quantile(r, 0.5), quantile(r, 0.9),
               quantile(r, 1), 100.0 * static_cast<double>(within) / static_cast<double>(r.size()));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> pos;
  std::string calib_dir, ocr_lines, damage = "measured";
  int n_singles = 0;
  bool in_context = false;
  const char* usage =
      "usage: spearman_check MODEL LABEL [RANDOM] [--calib DIR | --ocr-lines DIR] "
      "[--singles N] [--damage measured|fitted|auto] [--context]\n";
  // A count argument: a whole number ≥ 0, else nullopt.
  auto count = [](const std::string& v) -> std::optional<int> {
    if (v.empty() || v.size() > 6 ||
        !std::all_of(v.begin(), v.end(), [](unsigned char ch) { return std::isdigit(ch); }))
      return std::nullopt;
    return std::stoi(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value =
        a == "--calib" || a == "--ocr-lines" || a == "--singles" || a == "--damage";
    if (takes_value && i + 1 >= argc) {
      fmt::print(stderr, "spearman_check: {} needs a value\n{}", a, usage);
      return 2;
    }
    if (a == "--calib") {
      calib_dir = argv[++i];
    } else if (a == "--ocr-lines") {
      ocr_lines = argv[++i];
    } else if (a == "--context") {
      in_context = true;
    } else if (a == "--singles") {
      const std::optional<int> n = count(argv[++i]);
      if (!n) {
        fmt::print(stderr, "spearman_check: --singles takes a count, not '{}'\n", argv[i]);
        return 2;
      }
      n_singles = *n;
    } else if (a == "--damage") {
      damage = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      fmt::print(stderr, "spearman_check: unknown option {}\n{}", a, usage);
      return 2;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() < 2 || pos.size() > 3) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  if (pos.size() == 3 && !count(pos[2])) {
    fmt::print(stderr, "spearman_check: RANDOM takes a count, not '{}'\n", pos[2]);
    return 2;
  }
  if (damage != "measured" && damage != "fitted" && damage != "auto") {
    fmt::print(stderr, "spearman_check: --damage must be measured, fitted or auto, not '{}'\n",
               damage);
    return 2;
  }
  const bool all_measured = damage == "measured";
  if (in_context && !all_measured) {
    fmt::print(stderr, "spearman_check: --context needs --damage measured\n");
    return 2;
  }
  const std::string model_path = pos[0], label = pos[1];
  const int n_random = pos.size() > 2 ? *count(pos[2]) : 10;

  // compress's profile (every candidate's damage measured, or as --damage
  // says), and B.
  compress::CompressOptions co;
  co.model = model_path;
  co.uniform = label;
  // The default catalog: --uniform alone would profile dense and LABEL only.
  co.schemes = compress::default_schemes();
  co.calib_dir = calib_dir;
  co.ocr_lines = ocr_lines;
  co.damage = damage;
  co.out_dir =
      (std::filesystem::temp_directory_path() / fmt::format("tailor-spearman-check-{}", ::getpid()))
          .string();
  const compress::CompressResult cr = compress::compress_model(co);
  std::filesystem::remove_all(co.out_dir);
  // Under --damage fitted/auto the picks' D get measured below (as compress
  // measures them), so the profile is a copy that changes.
  ModelProfile profile = cr.profile;
  const int64_t budget = cr.plan.total_bytes;
  ModelProfile fitted = profile;  // --damage fitted/auto: the profile is already the fitted one
  if (all_measured) {
    for (LayerProfile& l : fitted.layers) {
      // As the fitted pass leaves them: only the probes hold a measured D (a
      // member measured since counts as measured in the fit).
      const std::vector<size_t> probes = compress::damage_probes(l);
      for (size_t c = 0; c < l.candidates.size(); ++c)
        if (l.candidates[c].label != "dense" &&
            std::find(probes.begin(), probes.end(), c) == probes.end())
          l.candidates[c].output_damage.reset();
      compress::fit_layer_damage(l);
    }
    print_fit_errors(profile, fitted);
  }

  // The Grams compress encodes with, and the inputs it verifies on.
  const graph::Model mf = load_model(model_path);
  const std::optional<graph::Model> llama = compress::llama_decoder(mf, model_path);
  const graph::Model* llama_ptr = llama ? &*llama : nullptr;
  ProfileOptions po = compress::compress_profile_options(co, llama_ptr);
  const compress::OutputObjective objective =
      compress::prepare_output_objective(mf, llama_ptr, co, po);
  const compress::Calibration eval = compress::verification_inputs(mf, llama_ptr, co);
  const compress::PlanDamage meter(llama ? *llama : mf, eval.inputs, eval.metric, eval.outputs, 0);
  // The same plans on the calibration inputs D was measured on: Σ D against
  // this tells interactions between layers (both sides on the same inputs)
  // from a shift between calibration and verification inputs.
  const compress::Calibration& cal = objective.calibration;
  const compress::PlanDamage cal_meter(llama ? *llama : mf, cal.inputs, cal.metric, cal.outputs, 0);

  // The plans.
  plan::Problem problem = plan::make_problem(profile, plan::Objective::output, budget, model_path);
  const plan::Problem problem_fitted =
      plan::make_problem(fitted, plan::Objective::output, budget, model_path);
  plan::SolveOptions so;
  so.seed = 1;
  // Under --damage fitted/auto, what compress predicts for a plan: each pick
  // whose D is fitted measured (measure_fitted_picks, as compress does) and,
  // for a solver's plan, re-solved until none is left (compress's rounds); a
  // fixed plan (uniform, another objective, random) keeps its choice.
  const graph::Model& run_model = llama ? *llama : mf;
  auto as_plan = [&](const plan::Choice& c, const std::string& name) {
    plan::Solution sol;
    sol.choice = c;
    sol.bytes = plan::choice_bytes(problem, c);
    sol.objective = plan::evaluate(problem, c);
    return plan::make_plan(profile, problem, sol, name, plan::Objective::output, 0);
  };
  auto measure_picks = [&](const plan::Choice& c, const std::string& name,
                           const std::function<plan::Choice()>& resolve, int rounds) {
    if (all_measured) return c;
    auto solve = [&] {
      problem = plan::make_problem(profile, plan::Objective::output, budget, model_path);
      return as_plan(resolve(), name);
    };
    compress::MeasuredPicks m = compress::measure_fitted_picks(
        run_model, objective, po, objective.grams, profile, as_plan(c, name), solve, rounds);
    // `problem` is current: each round ends with solve() after its measurements.
    size_t picks = 0;
    for (const compress::PickRound& r : m.rounds) picks += r.fitted_picks;
    fmt::print(stderr, "{}: {} rounds, {} fitted picks measured, {} left\n", name, m.rounds.size(),
               picks, m.fitted_left);
    return plan::find_candidates(profile, m.plan, name);
  };
  std::vector<Named> plans;
  for (const std::string& s : plan::solver_names()) {
    auto resolve = [&] { return plan::solve(s, problem, so).choice; };
    plans.push_back({s + " (output)", false, measure_picks(resolve(), s, resolve, 8)});
  }
  if (all_measured)
    plans.push_back({"exact (fitted)", false, plan::solve("exact", problem_fitted, so).choice});
  for (const plan::Objective obj : {plan::Objective::numel, plan::Objective::sum})
    plans.push_back(
        {fmt::format("exact ({})", plan::objective_name(obj)), false,
         plan::solve("exact", plan::make_problem(profile, obj, budget, model_path), so).choice});
  for (const std::string& u : {label, label + "-gptq"})
    if (plan::Choice c = uniform_choice(profile, u); !c.empty())
      plans.push_back({"uniform " + u, false, std::move(c)});
  // A choice as a plan, encoded as compress encodes it.
  auto encode_choice = [&](const plan::Choice& c, const std::string& name) {
    const plan::Plan pl = as_plan(c, name);
    auto enc = compress::encode_plan(mf, pl, po.scheme_defaults, 0x7a11, 0,
                                     objective.grams.get(compress::gram_weights(pl)));
    if (llama)  // the decoder graph holds f32 [out, in] linears, as compress stores them
      for (compress::EncodedLayer& e : enc) e.stored_dtype = DType::f32;
    return std::pair{pl, std::move(enc)};
  };
  if (n_singles > 0) {
    // Σ D's additivity, on the calibration inputs D came from.
    const plan::Choice uni = uniform_choice(profile, label),
                       dense = uniform_choice(profile, "dense");
    if (dense.empty())
      throw Error(model_path, "--singles: the profile has no dense candidate to leave layers at");
    auto measure_cal = [&](const plan::Choice& c, const std::string& name) {
      const auto [pl, enc] = encode_choice(c, name);
      return std::pair{pl.objective_value, cal_meter.measure(enc)};
    };
    std::vector<std::pair<double, size_t>> by_d;
    for (size_t l = 0; l < uni.size(); ++l)
      if (uni[l] != dense[l])
        by_d.emplace_back(*profile.layers[l].candidates[static_cast<size_t>(uni[l])].output_damage,
                          l);
    std::sort(by_d.rbegin(), by_d.rend());
    const auto [sum_all, whole_all] = measure_cal(uni, "uniform");
    fmt::print(
        "additivity of D on the calibration inputs, uniform {}: sum D {:.5g}, whole {:.5g}\n",
        label, sum_all, whole_all);
    fmt::print("{:<28} {:>11} {:>11} {:>11} {:>11}\n", "layer", "D", "alone", "uniform-it",
               "sum-it");
    for (size_t i = 0; i < by_d.size() && i < static_cast<size_t>(n_singles); ++i) {
      const size_t l = by_d[i].second;
      plan::Choice alone = dense, without = uni;
      alone[l] = uni[l];
      without[l] = dense[l];
      const double a = measure_cal(alone, "alone").second;
      const auto [s_w, w] = measure_cal(without, "without");
      fmt::print("{:<28} {:>11.5g} {:>11.5g} {:>11.5g} {:>11.5g}\n", profile.layers[l].name,
                 by_d[i].first, a, w, s_w);
      std::fflush(stdout);
    }
  }
  Rng rng(0x5eed);
  const plan::Choice base = plans.front().choice;
  for (int made = 0, tries = 0; made < n_random && tries < 100 * n_random; ++tries) {
    plan::Choice c = base;
    const size_t moves = 3 + rng.below(6);
    for (size_t m = 0; m < moves; ++m) {
      const size_t l = rng.below(c.size());
      c[l] = static_cast<int>(rng.below(problem.layers[l].size()));
    }
    while (plan::choice_bytes(problem, c) > problem.budget) {
      const size_t l = rng.below(c.size());
      std::vector<int> cheaper;
      for (size_t k = 0; k < problem.layers[l].size(); ++k)
        if (problem.layers[l][k].bytes < problem.layers[l][static_cast<size_t>(c[l])].bytes)
          cheaper.push_back(static_cast<int>(k));
      if (!cheaper.empty()) c[l] = cheaper[rng.below(cheaper.size())];
    }
    if (plan::choice_bytes(problem, c) < problem.budget * 95 / 100) continue;
    plans.push_back({fmt::format("random {}", made + 1), true, std::move(c)});
    ++made;
  }

  // The fixed plans' fitted picks measured (--damage fitted/auto).
  for (size_t i = plan::solver_names().size(); i < plans.size(); ++i) {
    const plan::Choice c = plans[i].choice;
    plans[i].choice = measure_picks(
        c, plans[i].name, [c] { return c; }, 1);
  }
  size_t n_fitted = 0, n_candidates = 0;
  for (const LayerProfile& l : cr.profile.layers)
    for (const Candidate& c : l.candidates) {
      ++n_candidates;
      n_fitted += c.output_damage_fitted ? 1 : 0;
    }
  fmt::print(
      "{}: B = {} bytes (uniform {}), {} plans; D on {} (--damage {}: {} of {} candidates' D "
      "fitted); measured ({}) on {}\n",
      model_path, budget, label, plans.size(), profile.calibration, damage, n_fitted, n_candidates,
      compress::damage_metric_name(eval.metric), eval.description);
  // --context: around the first plan (exact's, output objective).
  std::optional<compress::DamageInContext> dc;
  if (in_context) {
    dc = compress::measure_damage_in_context(mf, run_model, objective, po, profile,
                                             as_plan(plans.front().choice, "context"));
    fmt::print(
        "damage in context of {}: whole on the calibration inputs {:.5g} (cross-fitted), "
        "every candidate measured around it in {:.1f} s\n",
        plans.front().name, dc->context_damage, dc->seconds);
  }
  fmt::print("{:<18} {:>10} {:>11} {:>11} {:>11} {:>7} {:>7} {:>11} {:>7}{}\n", "plan", "bytes",
             "predicted", "pred fitted", "measured", "pred/m", "fit/m", "meas calib", "pred/c",
             dc ? "    ctx pred   ctx/m" : "");
  std::vector<double> pred, fit, meas, pred_r, fit_r, meas_r, ratio, ratio_f, meas_c, ratio_c;
  std::vector<double> ctx, ratio_x;
  for (const Named& p : plans) {
    const auto [pl, enc] = encode_choice(p.choice, p.name);
    const double predicted = pl.objective_value, f = plan::evaluate(problem_fitted, p.choice);
    const double m = meter.measure(enc), mc = cal_meter.measure(enc);
    meas_c.push_back(mc);
    ratio_c.push_back(predicted / mc);
    pred.push_back(predicted);
    fit.push_back(f);
    meas.push_back(m);
    ratio.push_back(predicted / m);
    ratio_f.push_back(f / m);
    if (p.random) {
      pred_r.push_back(predicted);
      fit_r.push_back(f);
      meas_r.push_back(m);
    }
    std::string in_ctx;
    if (dc) {
      ctx.push_back(compress::predicted_in_context(*dc, pl));
      ratio_x.push_back(ctx.back() / m);
      in_ctx = fmt::format(" {:>11.5g} {:>7.3f}", ctx.back(), ratio_x.back());
    }
    fmt::print(
        "{:<18} {:>10} {:>11.5g} {:>11.5g} {:>11.5g} {:>7.3f} {:>7.3f} {:>11.5g} {:>7.3f}{}\n",
        p.name, pl.total_bytes, predicted, f, m, predicted / m, f / m, mc, predicted / mc, in_ctx);
    std::fflush(stdout);
  }
  // The two predictions' names: measured D and fitted D, or (--damage
  // fitted/auto) the plan's picks measured and the profile as read.
  const std::string pred_name = all_measured ? "measured D" : "D, picks measured",
                    fit_name = all_measured ? "fitted D" : "D as read";
  auto rho_r = [&](const std::vector<double>& a) {
    return a.size() > 1 ? spearman(a, meas_r) : std::nan("");
  };
  fmt::print(
      "Spearman rho vs measured: {}: all {} plans {:.3f}, the {} random ones {:.3f}; "
      "{}: all {:.3f}, random {:.3f}\n",
      pred_name, pred.size(), spearman(pred, meas), pred_r.size(), rho_r(pred_r), fit_name,
      spearman(fit, meas), rho_r(fit_r));
  fmt::print("on the calibration inputs: Spearman rho of {} vs measured {:.3f}\n", pred_name,
             spearman(pred, meas_c));
  std::sort(ratio.begin(), ratio.end());
  std::sort(ratio_f.begin(), ratio_f.end());
  std::sort(ratio_c.begin(), ratio_c.end());
  fmt::print(
      "predicted/measured: {} min {:.3f}, median {:.3f}, max {:.3f}; {} min "
      "{:.3f}, median {:.3f}, max {:.3f}\n",
      pred_name, ratio.front(), ratio[ratio.size() / 2], ratio.back(), fit_name, ratio_f.front(),
      ratio_f[ratio_f.size() / 2], ratio_f.back());
  fmt::print(
      "predicted/measured on the calibration inputs: min {:.3f}, median {:.3f}, max {:.3f}\n",
      ratio_c.front(), ratio_c[ratio_c.size() / 2], ratio_c.back());
  if (dc) {
    const double rho = spearman(ctx, meas);
    std::sort(ratio_x.begin(), ratio_x.end());
    const auto within = std::count_if(ratio_x.begin(), ratio_x.end(),
                                      [](double x) { return x >= 0.5 && x <= 2.0; });
    fmt::print(
        "in context: Spearman rho vs measured {:.3f}; predicted/measured min {:.3f}, median "
        "{:.3f}, max {:.3f}; {} of {} plans within 0.5-2x\n",
        rho, ratio_x.front(), ratio_x[ratio_x.size() / 2], ratio_x.back(), within, ratio_x.size());
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "spearman_check: {}\n", e.what());
  return 1;
}
