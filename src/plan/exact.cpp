#include "tailor/plan/exact.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>

#include "hull.h"
#include "tailor/linalg/threads.h"
#include "tailor/plan/two_budget.h"

namespace tailor::plan {
namespace {

using Clock = std::chrono::steady_clock;

/// A layer that keeps more than one option after reduced-cost fixing.
struct FreeLayer {
  int layer = 0;
  std::vector<int> options;  // by bytes, ascending
};

/// A partial plan over the first k core layers.
struct State {
  int64_t bytes;
  double cost;     // objective of the core layers decided so far
  double reduced;  // their summed reduced cost
  int32_t parent;  // index in the previous stage
  int32_t option;  // option index taken at this stage's layer
};

/// Multipliers, as multiples of λ, whose Lagrangian bounds prune partial
/// plans: μ > λ prices plans that overfill, μ < λ plans that leave bytes unused.
constexpr double kFan[] = {0.0,   0.5,  0.75, 0.9,  0.95, 0.98, 0.99, 0.995, 1.0,
                           1.005, 1.01, 1.02, 1.05, 1.1,  1.25, 1.5,  2.0,   4.0};
constexpr size_t kFans = std::size(kFan);

/// Most partial plans held at once (32 bytes each, about 270 MB); beyond it
/// the search stops as at a time limit, with a certified bound.
constexpr size_t kMaxStates = size_t{1} << 23;

/// Partial plans kept per stage by the first, heuristic pass.
constexpr size_t kBeam = 512;

class ExactSolver {
 public:
  ExactSolver(const Problem& problem, const SolveOptions& options)
      : p_(problem), start_(Clock::now()), limit_(options.time_limit_s) {
    frontiers_ = build_frontiers(p_, linalg::resolve_threads(options.threads));
  }

  Solution run() {
    const Sweep sweep = sweep_hulls(p_, frontiers_);
    best_ = sweep.greedy;
    upper_ = evaluate(p_, best_);
    lambda_ = sweep.lambda;
    lower_ = lagrangian_bound(p_, lambda_, &minima_);
    if (!sweep.binding || upper_ - lower_ <= tolerance()) return finish(upper_, true);
    // A beam pass finds a near-optimal plan fast; the tighter upper bound it
    // gives shrinks the core the exact pass has to search.
    fix_by_reduced_cost();
    if (!dynamic_program(kBeam)) return finish(lower_, false);
    adopt_best();
    if (upper_ - lower_ <= tolerance()) return finish(upper_, true);
    fix_by_reduced_cost();
    if (!dynamic_program(0)) return finish(certified_, false);
    return finish(upper_, true);
  }

 private:
  double tolerance() const { return 1e-13 * std::max(std::abs(upper_), 1e-300); }
  double reduced(int layer, int option) const {
    const Option& o = p_.layers[layer][option];
    return o.cost + lambda_ * static_cast<double>(o.bytes) - minima_[layer];
  }
  bool out_of_time() const {
    return limit_ > 0 && std::chrono::duration<double>(Clock::now() - start_).count() > limit_;
  }

  // Splits layers into fixed ones (one surviving option) and the free core.
  void fix_by_reduced_cost() {
    const double keep = (upper_ - lower_) * (1 + 1e-9) + tolerance();
    fixed_choice_.assign(p_.layers.size(), -1);
    fixed_bytes_ = 0;
    fixed_cost_ = fixed_reduced_ = 0;
    core_.clear();
    for (size_t i = 0; i < p_.layers.size(); ++i) {
      FreeLayer f;
      f.layer = static_cast<int>(i);
      for (int j : frontiers_[i].pareto) {
        if (reduced(f.layer, j) <= keep) f.options.push_back(j);
      }
      if (f.options.size() == 1) {
        const Option& o = p_.layers[i][f.options[0]];
        fixed_choice_[i] = f.options[0];
        fixed_bytes_ += o.bytes;
        fixed_cost_ += o.cost;
        fixed_reduced_ += reduced(f.layer, f.options[0]);
      } else {
        core_.push_back(std::move(f));
      }
    }
    // Layers whose surviving options span the most bytes first: the partial
    // plans' bytes spread early, so the bounds separate them early (on
    // synthetic 2,000-layer models this explores ~10× fewer plans than
    // ordering by reduced cost).
    auto span = [&](const FreeLayer& f) {
      const auto& layer = p_.layers[f.layer];
      return layer[f.options.back()].bytes - layer[f.options.front()].bytes;
    };
    std::stable_sort(core_.begin(), core_.end(),
                     [&](const FreeLayer& a, const FreeLayer& b) { return span(a) > span(b); });
  }

  // Suffix tables over the core for bounds and completions.
  void prepare_suffixes() {
    const size_t k_max = core_.size();
    rest_min_.assign(k_max + 1, 0);
    rest_max_.assign(k_max + 1, 0);
    inc_bytes_.assign(k_max + 1, 0);
    inc_cost_.assign(k_max + 1, 0);
    fan_.assign((k_max + 1) * kFans, 0);
    for (size_t k = k_max; k-- > 0;) {
      const auto& opts = core_[k].options;
      const auto& layer = p_.layers[core_[k].layer];
      const Option& g = layer[best_[core_[k].layer]];
      rest_min_[k] = rest_min_[k + 1] + layer[opts.front()].bytes;
      rest_max_[k] = rest_max_[k + 1] + layer[opts.back()].bytes;
      inc_bytes_[k] = inc_bytes_[k + 1] + g.bytes;
      inc_cost_[k] = inc_cost_[k + 1] + g.cost;
      // fan_[k][m] = Σ_{k' ≥ k} min over surviving options of (c + μ_m·w).
      for (size_t m = 0; m < kFans; ++m) {
        const double mu = kFan[m] * lambda_;
        double best = HUGE_VAL;
        for (int j : opts)
          best = std::min(best, layer[j].cost + mu * static_cast<double>(layer[j].bytes));
        fan_[k * kFans + m] = fan_[(k + 1) * kFans + m] + best;
      }
    }
  }

  // Lower bound on every completion of a partial plan over core layers < next.
  double bound(const State& s, size_t next) const {
    const int64_t room = p_.budget - fixed_bytes_;
    const int64_t unfilled = room - s.bytes - rest_max_[next];
    double b = lower_ + fixed_reduced_ + s.reduced +
               (unfilled > 0 ? lambda_ * static_cast<double>(unfilled) : 0.0);
    const double left = static_cast<double>(room - s.bytes);
    for (size_t m = 0; m < kFans; ++m)
      b = std::max(b, fixed_cost_ + s.cost + fan_[next * kFans + m] - kFan[m] * lambda_ * left);
    return b;
  }

  // Dynamic programming over the core with lists of undominated partial plans
  // (exact when beam is 0; otherwise at most `beam` plans kept per stage, the
  // ones with the least bound). Returns false when time ran out; certified_
  // then holds the least bound of the open plans.
  bool dynamic_program(size_t beam) {
    const size_t k_max = core_.size();
    const int64_t room = p_.budget - fixed_bytes_;
    prepare_suffixes();
    stages_.assign(1, {State{0, 0, 0, -1, -1}});
    std::vector<State> next;
    std::vector<std::pair<double, size_t>> ranked;
    size_t held = 1;
    for (size_t k = 0; k < k_max; ++k) {
      const std::vector<State>& cur = stages_[k];
      const std::vector<int>& opts = core_[k].options;
      const int layer = core_[k].layer;
      next.clear();
      for (size_t si = 0; si < cur.size(); ++si) {
        if ((si & 4095) == 0 && (out_of_time() || held + next.size() > kMaxStates))
          return stop(cur, k);
        const State& s = cur[si];
        for (int j : opts) {
          const Option& o = p_.layers[layer][j];
          const State t{s.bytes + o.bytes, s.cost + o.cost, s.reduced + reduced(layer, j),
                        static_cast<int32_t>(si), j};
          if (t.bytes + rest_min_[k + 1] > room) break;  // options ascend in bytes
          if (bound(t, k + 1) > upper_ - tolerance()) continue;
          next.push_back(t);
        }
      }
      std::sort(next.begin(), next.end(), [](const State& a, const State& b) {
        return a.bytes != b.bytes ? a.bytes < b.bytes : a.cost < b.cost;
      });
      std::vector<State> kept;
      for (const State& s : next)
        if (kept.empty() || s.cost < kept.back().cost) kept.push_back(s);
      if (beam > 0 && kept.size() > beam) {
        ranked.clear();
        for (size_t t = 0; t < kept.size(); ++t) ranked.emplace_back(bound(kept[t], k + 1), t);
        std::nth_element(ranked.begin(), ranked.begin() + beam, ranked.end());
        ranked.resize(beam);
        std::sort(ranked.begin(), ranked.end(),
                  [](const auto& a, const auto& b) { return a.second < b.second; });
        std::vector<State> best;
        for (const auto& r : ranked) best.push_back(kept[r.second]);
        kept.swap(best);
      }
      nodes_ += static_cast<int64_t>(kept.size());
      held += kept.size();
      // Completing with the incumbent's choices may give a better plan.
      for (size_t t = 0; t < kept.size(); ++t) {
        if (kept[t].bytes + inc_bytes_[k + 1] > room) continue;
        const double value = fixed_cost_ + kept[t].cost + inc_cost_[k + 1];
        if (value < upper_) {
          upper_ = value;
          best_stage_ = static_cast<int>(k + 1);
          best_index_ = static_cast<int>(t);
        }
      }
      stages_.push_back(std::move(kept));
      if (stages_.back().empty()) break;
    }
    return true;
  }

  // Stops the search with certified_ the least bound of the partial plans
  // still open (`open`, over core layers < next); returns false.
  bool stop(const std::vector<State>& open, size_t next) {
    certified_ = upper_;
    for (const State& s : open) certified_ = std::min(certified_, bound(s, next));
    certified_ = std::max(certified_, lower_);
    return false;
  }

  // Makes the best partial plan found (completed with the incumbent) the
  // incumbent: fixed layers, core layers decided up to its stage, then the
  // previous incumbent's choices.
  void adopt_best() {
    if (best_stage_ < 0) return;
    Choice c = best_;
    for (size_t i = 0; i < c.size(); ++i)
      if (fixed_choice_[i] >= 0) c[i] = fixed_choice_[i];
    int index = best_index_;
    for (int k = best_stage_; k > 0; --k) {
      const State& s = stages_[k][index];
      c[core_[k - 1].layer] = s.option;
      index = s.parent;
    }
    best_ = std::move(c);
    upper_ = evaluate(p_, best_);
    best_stage_ = best_index_ = -1;
  }

  Solution finish(double lower_bound, bool proven) {
    adopt_best();
    Solution s;
    s.choice = best_;
    s.objective = evaluate(p_, best_);
    s.bytes = choice_bytes(p_, best_);
    s.proven_optimal = proven;
    s.lower_bound = proven ? s.objective : std::min(lower_bound, s.objective);
    s.nodes = nodes_;
    s.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return s;
  }

  const Problem& p_;
  Clock::time_point start_;
  double limit_;
  std::vector<LayerFrontier> frontiers_;
  Choice best_;
  double upper_ = 0, lower_ = 0, lambda_ = 0, certified_ = 0;
  std::vector<double> minima_;
  std::vector<int> fixed_choice_;
  int64_t fixed_bytes_ = 0;
  double fixed_cost_ = 0, fixed_reduced_ = 0;
  std::vector<FreeLayer> core_;
  std::vector<int64_t> rest_min_, rest_max_, inc_bytes_;
  std::vector<double> inc_cost_, fan_;
  std::vector<std::vector<State>> stages_;
  int best_stage_ = -1, best_index_ = -1;
  int64_t nodes_ = 0;
};

}  // namespace

Solution solve_exact(const Problem& problem, const SolveOptions& options) {
  if (problem.has_latency()) return solve_two_budgets(problem, options);
  require_additive(problem, "exact");
  check_feasible(problem);
  return ExactSolver(problem, options).run();
}

}  // namespace tailor::plan
