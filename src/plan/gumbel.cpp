#include "tailor/plan/gumbel.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "hull.h"
#include "repair.h"
#include "tailor/core/rng.h"
#include "tailor/decision/categorical.h"
#include "tailor/decision/optim.h"

namespace tailor::plan {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

Solution solve_gumbel(const Problem& problem, const SolveOptions& options, const GumbelOptions& g) {
  const auto start = Clock::now();
  require_additive(problem, "gumbel");
  check_feasible(problem);
  const size_t n = problem.layers.size();
  // One categorical decision per layer, one logit per option.
  decision::Space space;
  for (size_t i = 0; i < n; ++i) space.add(std::to_string(i), problem.layers[i].size());
  // Normalization: costs by the mean per-layer cost range, bytes by the
  // budget's share per layer, so one learning rate suits every model.
  double range_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    double lo = problem.layers[i][0].cost, hi = lo;
    for (const Option& o : problem.layers[i]) lo = std::min(lo, o.cost), hi = std::max(hi, o.cost);
    range_sum += hi - lo;
  }
  const double cost_scale = n > 0 && range_sum > 0 ? range_sum / static_cast<double>(n) : 1.0;
  const double budget = static_cast<double>(std::max<int64_t>(problem.budget, 1));
  const double byte_unit = budget / static_cast<double>(std::max<size_t>(n, 1));
  const size_t total = space.logit_count();
  std::vector<double> cost(total), bytes(total);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < problem.layers[i].size(); ++j) {
      cost[space.offset(i) + j] = problem.layers[i][j].cost / cost_scale;
      bytes[space.offset(i) + j] = static_cast<double>(problem.layers[i][j].bytes) / byte_unit;
    }

  std::vector<double> theta = space.logits(0), grad(total), value(total), p(total);
  decision::AdamOptions adam_options;
  adam_options.learning_rate = g.learning_rate;
  decision::Adam adam(total, adam_options);
  decision::DualAscent dual(g.dual_step);
  Rng rng(options.seed);
  Choice incumbent;
  double best = HUGE_VAL;
  auto consider_rounding = [&] {
    Choice c = space.argmax(theta);
    repair(problem, c);
    const double v = evaluate(problem, c);
    if (v < best) best = v, incumbent = std::move(c);
  };
  int64_t steps = 0;
  for (int it = 1; it <= g.iterations; ++it) {
    if (options.time_limit_s > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > options.time_limit_s)
      break;
    // a_j: the Lagrangian's per-option value cost_j + λ·bytes_j, so the
    // relaxed Lagrangian of layer i is Σ_j y_j a_j.
    const double lambda = dual.lambda();
    for (size_t j = 0; j < total; ++j) value[j] = cost[j] + lambda * bytes[j];
    double used = 0;  // expected (or sampled) bytes, in byte units
    for (size_t i = 0; i < n; ++i) {
      const auto th = space.slice(std::span<const double>(theta), i);
      const auto a = space.slice(std::span<const double>(value), i);
      const auto b = space.slice(std::span<const double>(bytes), i);
      const auto gi = space.slice(std::span<double>(grad), i);
      if (g.mode == GumbelOptions::Mode::expected) {
        const auto pi = space.slice(std::span<double>(p), i);
        decision::softmax(th, pi);
        decision::softmax_backward(pi, a, gi);
        used += decision::expectation(pi, b);
      } else {
        const decision::GumbelSample s = decision::gumbel_softmax(th, g.temperature, rng);
        decision::straight_through(s, a, g.temperature, gi);
        used += b[s.hard];
      }
    }
    adam.step(theta, grad);
    dual.update(used / static_cast<double>(std::max<size_t>(n, 1)) - 1);
    ++steps;
    if (g.round_every > 0 && it % g.round_every == 0) consider_rounding();
  }
  consider_rounding();

  const Sweep sweep = sweep_hulls(problem, build_frontiers(problem, 1));
  return heuristic_solution(problem, incumbent, sweep.lambda, steps, start);
}

}  // namespace tailor::plan
