#include "tailor/plan/gumbel.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "hull.h"
#include "repair.h"
#include "tailor/core/rng.h"

namespace tailor::plan {
namespace {

using Clock = std::chrono::steady_clock;

void softmax(const double* z, size_t k, double* out) {
  double m = z[0];
  for (size_t j = 1; j < k; ++j) m = std::max(m, z[j]);
  double total = 0;
  for (size_t j = 0; j < k; ++j) total += out[j] = std::exp(z[j] - m);
  for (size_t j = 0; j < k; ++j) out[j] /= total;
}

}  // namespace

Solution solve_gumbel(const Problem& problem, const SolveOptions& options, const GumbelOptions& g) {
  const auto start = Clock::now();
  require_additive(problem, "gumbel");
  check_feasible(problem);
  const size_t n = problem.layers.size();
  // Normalization: costs by the mean per-layer cost range, bytes by the
  // budget's share per layer, so one learning rate suits every model.
  double range_sum = 0;
  std::vector<size_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    double lo = problem.layers[i][0].cost, hi = lo;
    for (const Option& o : problem.layers[i]) lo = std::min(lo, o.cost), hi = std::max(hi, o.cost);
    range_sum += hi - lo;
    offset[i + 1] = offset[i] + problem.layers[i].size();
  }
  const double cost_scale = n > 0 && range_sum > 0 ? range_sum / static_cast<double>(n) : 1.0;
  const double budget = static_cast<double>(std::max<int64_t>(problem.budget, 1));
  const double byte_unit = budget / static_cast<double>(std::max<size_t>(n, 1));
  std::vector<double> cost(offset[n]), bytes(offset[n]);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < problem.layers[i].size(); ++j) {
      cost[offset[i] + j] = problem.layers[i][j].cost / cost_scale;
      bytes[offset[i] + j] = static_cast<double>(problem.layers[i][j].bytes) / byte_unit;
    }

  std::vector<double> theta(offset[n], 0), m(offset[n], 0), v(offset[n], 0);
  std::vector<double> y(offset[n]), z;
  Rng rng(options.seed);
  double lambda = 0;
  Choice incumbent;
  double best = HUGE_VAL;
  auto consider_rounding = [&] {
    Choice c(n);
    for (size_t i = 0; i < n; ++i)
      c[i] = static_cast<int>(
          std::max_element(theta.begin() + offset[i], theta.begin() + offset[i + 1]) -
          (theta.begin() + offset[i]));
    repair(problem, c);
    const double value = evaluate(problem, c);
    if (value < best) best = value, incumbent = std::move(c);
  };
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  int64_t steps = 0;
  for (int it = 1; it <= g.iterations; ++it) {
    if (options.time_limit_s > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > options.time_limit_s)
      break;
    double used = 0;  // expected (or sampled) bytes, in byte units
    const double c1 = 1 - std::pow(b1, it), c2 = 1 - std::pow(b2, it);
    for (size_t i = 0; i < n; ++i) {
      const size_t k = problem.layers[i].size(), o = offset[i];
      double* yi = y.data() + o;
      double scale = 1;
      size_t hard = 0;
      if (g.mode == GumbelOptions::Mode::expected) {
        softmax(theta.data() + o, k, yi);
      } else {
        z.assign(k, 0);
        for (size_t j = 0; j < k; ++j) z[j] = (theta[o + j] + rng.gumbel()) / g.temperature;
        softmax(z.data(), k, yi);
        hard = std::max_element(z.begin(), z.end()) - z.begin();
        scale = 1 / g.temperature;
      }
      // a_j: the Lagrangian's per-option value; the gradient of Σ_j y_j a_j
      // through the softmax is y_k (a_k − Σ_j y_j a_j) (times 1/temperature).
      double mean = 0;
      for (size_t j = 0; j < k; ++j) mean += yi[j] * (cost[o + j] + lambda * bytes[o + j]);
      used += g.mode == GumbelOptions::Mode::expected ? 0 : bytes[o + hard];
      for (size_t j = 0; j < k; ++j) {
        if (g.mode == GumbelOptions::Mode::expected) used += yi[j] * bytes[o + j];
        const double grad = scale * yi[j] * (cost[o + j] + lambda * bytes[o + j] - mean);
        m[o + j] = b1 * m[o + j] + (1 - b1) * grad;
        v[o + j] = b2 * v[o + j] + (1 - b2) * grad * grad;
        const double mh = m[o + j] / c1, vh = v[o + j] / c2;
        theta[o + j] -= g.learning_rate * mh / (std::sqrt(vh) + eps);
      }
    }
    lambda = std::max(
        0.0, lambda + g.dual_step * (used / static_cast<double>(std::max<size_t>(n, 1)) - 1));
    ++steps;
    if (g.round_every > 0 && it % g.round_every == 0) consider_rounding();
  }
  consider_rounding();

  const Sweep sweep = sweep_hulls(problem, build_frontiers(problem, 1));
  return heuristic_solution(problem, incumbent, sweep.lambda, steps, start);
}

}  // namespace tailor::plan
