// Does the output objective order plans of equal bytes as the measured
// output does? (issue 13, "prediction checked"). On an OCR recogniser:
//
//   spearman_check MODEL KEYS OCR_DIR LABEL [RANDOM]
//
// The profile is compress's own (compress_model with --uniform LABEL, the
// default catalog and the output objective, read from the profile cache when
// it holds it; damage D and the -gptq Grams from the even-numbered lines of
// OCR_DIR). The budget B is uniform LABEL's total bytes. Plans at B: the five
// solvers under the output objective, exact under the weight-error objectives
// (numel, sum), uniform LABEL and uniform LABEL-gptq, and RANDOM (default 10)
// random feasible perturbations of the exact plan (seeded; a few layers moved
// to a random candidate, then random layers moved to cheaper candidates until
// the plan fits, kept when it takes at least 95% of B's planned bytes). Each
// plan is encoded (compress::encode_plan with the Grams), rewritten
// (rewrite_tailor) and run on the odd-numbered lines: measured mean KL per
// output frame (compress::DamageMeter) and character accuracy, beside the
// predicted Σ_ℓ D(ℓ, c_ℓ). Prints one row per plan, Spearman's ρ of predicted
// vs measured (average ranks for ties) over all plans and over the random ones,
// and the predicted/measured ratios (min, median, max).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/io/load_model.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/problem.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"
#include "tailor/tasks/image.h"
#include "tailor/tasks/ocr.h"

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

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 5) {
    fmt::print(stderr, "usage: spearman_check MODEL KEYS OCR_DIR LABEL [RANDOM]\n");
    return 2;
  }
  const std::string model_path = argv[1], dir = argv[3], label = argv[4];
  const int n_random = argc > 5 ? std::stoi(argv[5]) : 10;
  const graph::Model model = load_model(model_path);
  const std::vector<std::string> classes = tasks::read_ocr_keys(argv[2]);

  // compress's profile (damage on the even lines), and B.
  compress::CompressOptions co;
  co.model = model_path;
  co.uniform = label;
  co.ocr_lines = dir;
  co.ocr_keys = argv[2];
  co.out_dir = (std::filesystem::temp_directory_path() / "tailor-spearman-check").string();
  const compress::CompressResult cr = compress::compress_model(co);
  std::filesystem::remove_all(co.out_dir);
  const ModelProfile& profile = cr.profile;
  const int64_t budget = cr.plan.total_bytes;

  // Calibration (Grams) on the even lines, evaluation on the odd ones.
  const auto labels = tasks::read_ocr_labels(dir);
  const std::string in_name = model.graph.inputs.at(0), out_name = model.graph.outputs.at(0);
  std::vector<std::map<std::string, Tensor>> calib, eval;
  std::vector<std::string> truth;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Tensor x = tasks::ocr_rec_preprocess(tasks::read_png(dir + "/" + labels[i].first));
    if (i % 2 == 0) {
      calib.push_back({{in_name, x}});
    } else {
      eval.push_back({{in_name, x}});
      truth.push_back(labels[i].second);
    }
  }
  compress::Grams grams;
  for (auto& [name, g] : runtime::gram(model, calib))
    grams[name] = std::make_shared<const schemes::Gram>(std::move(g));
  std::vector<std::map<std::string, Tensor>> reference;
  {
    runtime::Executor ex(model);
    for (const auto& in : eval) reference.push_back(ex.run(in));
  }

  // The plans.
  const plan::Problem problem =
      plan::make_problem(profile, plan::Objective::output, budget, model_path);
  plan::SolveOptions so;
  so.seed = 1;
  std::vector<Named> plans;
  for (const std::string& s : plan::solver_names())
    plans.push_back({s + " (output)", false, plan::solve(s, problem, so).choice});
  for (const plan::Objective obj : {plan::Objective::numel, plan::Objective::sum})
    plans.push_back(
        {fmt::format("exact ({})", plan::objective_name(obj)), false,
         plan::solve("exact", plan::make_problem(profile, obj, budget, model_path), so).choice});
  for (const std::string& u : {label, label + "-gptq"})
    if (plan::Choice c = uniform_choice(profile, u); !c.empty())
      plans.push_back({"uniform " + u, false, std::move(c)});
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

  fmt::print("{}: B = {} bytes (uniform {}), {} plans; D on {}; measured on {} odd lines\n",
             model_path, budget, label, plans.size(), profile.calibration, eval.size());
  fmt::print("{:<18} {:>10} {:>11} {:>11} {:>7} {:>8}\n", "plan", "bytes", "predicted", "measured",
             "pred/m", "char_acc");
  std::vector<double> pred, meas, pred_r, meas_r, ratio;
  for (const Named& p : plans) {
    plan::Solution sol;
    sol.choice = p.choice;
    sol.bytes = plan::choice_bytes(problem, p.choice);
    sol.objective = plan::evaluate(problem, p.choice);
    const plan::Plan pl =
        plan::make_plan(profile, problem, sol, p.name, plan::Objective::output, 0);
    const auto enc = compress::encode_plan(model, pl, {}, 0x7a11, 0, grams);
    runtime::Executor ex(compress::rewrite_tailor(model, enc));
    compress::DamageMeter meter(compress::DamageMetric::kl_probabilities, {out_name});
    size_t edits = 0, chars = 0;
    for (size_t i = 0; i < eval.size(); ++i) {
      const auto y = ex.run(eval[i]);
      meter.add(reference[i], y);
      edits += tasks::edit_distance(truth[i], tasks::ctc_greedy_decode(y.at(out_name), classes));
      chars += tasks::utf8_code_points(truth[i]).size();
    }
    const double m = meter.value();
    pred.push_back(sol.objective);
    meas.push_back(m);
    ratio.push_back(sol.objective / m);
    if (p.random) {
      pred_r.push_back(sol.objective);
      meas_r.push_back(m);
    }
    fmt::print("{:<18} {:>10} {:>11.5f} {:>11.5f} {:>7.3f} {:>8.4f}\n", p.name, pl.total_bytes,
               sol.objective, m, sol.objective / m, 1.0 - double(edits) / double(chars));
    std::fflush(stdout);
  }
  std::sort(ratio.begin(), ratio.end());
  fmt::print(
      "Spearman rho (predicted vs measured): all {} plans {:.3f}; the {} random ones {:.3f}\n",
      pred.size(), spearman(pred, meas), pred_r.size(),
      pred_r.size() > 1 ? spearman(pred_r, meas_r) : std::nan(""));
  fmt::print("predicted/measured: min {:.3f}, median {:.3f}, max {:.3f}\n", ratio.front(),
             ratio[ratio.size() / 2], ratio.back());
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "spearman_check: {}\n", e.what());
  return 1;
}
