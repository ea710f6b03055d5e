// The uniform guard's statistics and verdict (compress::guard_pick and its
// parts, compress.h): the plan's margin over the best uniform, and the
// paired one-sided t bound of plan − uniform over the calibration inputs
// (Student's t, 95%).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tailor/compress/compress.h"
#include "tailor/core/error.h"

namespace tailor::compress {

double student_t95(int64_t df) {
  if (df < 1) throw Error("guard", fmt::format("Student's t needs df >= 1, got {}", df));
  // One-sided 95% quantiles t_{0.95, df} for df = 1..30 (standard tables, 3
  // decimals); above 30 the Cornish-Fisher expansion of the normal quantile
  // z = 1.6448536 to 1/df², within 1e-3 of the exact value there.
  static constexpr double kTable[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860,
                                      1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746,
                                      1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
                                      1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (df <= 30) return kTable[df - 1];
  const double z = 1.6448536, n = static_cast<double>(df);
  return z + (z * z * z + z) / (4 * n) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

double difference_bound(const GuardPoint& a, const GuardPoint& b) {
  const size_t n = a.per_input.size();
  if (n < 2 || b.per_input.size() != n) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = a.per_input[i] - b.per_input[i];  // NaN stays NaN
  const double mean = std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double v : d) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  return mean + student_t95(static_cast<int64_t>(n) - 1) * sd / std::sqrt(static_cast<double>(n));
}

namespace {

/// Whether `plan` is below kPlanMargin × `uniform`'s damage (plan_holds).
bool below_margin(const GuardPoint& plan, const GuardPoint& uniform) {
  return plan.damage < kPlanMargin * uniform.damage;
}

}  // namespace

bool plan_holds(const GuardPoint& plan, const GuardPoint& uniform) {
  if (std::isnan(uniform.damage)) return true;
  if (std::isnan(plan.damage)) return false;
  if (below_margin(plan, uniform)) return true;
  const double bound = difference_bound(plan, uniform);
  return std::isnan(bound) ? !(uniform.damage < plan.damage) : bound < 0;
}

size_t best_uniform(const std::vector<GuardPoint>& points, int64_t budget) {
  size_t best = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].bytes > budget || std::isnan(points[i].damage)) continue;
    if (best == 0 || points[i].damage < points[best].damage) best = i;
  }
  return best;
}

size_t guard_pick(const std::vector<GuardPoint>& points, int64_t budget) {
  if (points.empty()) throw Error("guard", "no plan to choose from");
  const size_t u = best_uniform(points, budget);
  return u == 0 || plan_holds(points[0], points[u]) ? 0 : u;
}

std::string guard_verdict(const std::vector<GuardPoint>& points, size_t kept, int64_t budget,
                          const std::string& metric, size_t folds) {
  if (points.empty() || kept >= points.size())
    throw Error("guard", fmt::format("kept point {} of {}", kept, points.size()));
  const GuardPoint& mine = points.front();
  const auto within = std::count_if(points.begin() + 1, points.end(),
                                    [&](const GuardPoint& p) { return p.bytes <= budget; });
  const std::string compared =
      fmt::format("{} uniform scheme{} within the budget, {} over it{}", within,
                  within == 1 ? "" : "s", points.size() - 1 - static_cast<size_t>(within),
                  folds > 1 ? fmt::format("; -gptq layers cross-fitted in {} folds", folds) : "");
  // The paired test's outcome, as guard_pick decided it.
  auto paired = [&](const GuardPoint& u) {
    const double bound = difference_bound(mine, u);
    return std::isnan(bound)
               ? std::string("no paired bound (fewer than 2 calibration inputs, or a NaN)")
               : fmt::format(
                     "paired 95% upper bound of the mean per-input difference plan − it "
                     "{:.3g} {} 0",
                     bound, bound < 0 ? "<" : "≥");
  };
  // The margin, when the plan is below it.
  auto margin = [&](const GuardPoint& u) {
    return below_margin(mine, u) ? fmt::format("{:.3g}× its damage, below the {}× margin; ",
                                               mine.damage / u.damage, kPlanMargin)
                                 : std::string();
  };
  if (kept == 0) {
    const size_t rival = best_uniform(points, budget);
    return fmt::format(
        "kept the {}: calibration {} {:.4g}{} ({} compared)", mine.name, metric, mine.damage,
        rival == 0
            ? std::string("; no uniform scheme within the budget")
            : fmt::format("; against the best uniform, {} ({:.4g}), {}{}", points[rival].name,
                          points[rival].damage, margin(points[rival]), paired(points[rival])),
        compared);
  }
  const GuardPoint& u = points[kept];
  // A plan lower on the mean but not on paired evidence: the bound's width
  // falls as 1/√n (t_{0.95, n−1}·s/√n), so more inputs may let it through.
  const std::string more =
      mine.damage < u.damage && mine.per_input.size() >= 2
          ? fmt::format(
                "; the plan is lower on the mean, but its per-input differences over {} "
                "calibration inputs leave the bound wide: more inputs narrow it",
                mine.per_input.size())
          : "";
  return fmt::format(
      "kept {}: calibration {} {:.4g}, the lowest of the uniform schemes within the budget; {}'s "
      "{:.4g} is neither below {}× it nor lower with 95% confidence ({}; {} compared){}",
      u.name, metric, u.damage, mine.name, mine.damage, kPlanMargin, paired(u), compared, more);
}

}  // namespace tailor::compress
