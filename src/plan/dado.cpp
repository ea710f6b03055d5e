#include "tailor/plan/dado.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "hull.h"
#include "parallel.h"
#include "repair.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"

namespace tailor::plan {
namespace {

using Clock = std::chrono::steady_clock;

class Dado {
 public:
  Dado(const Problem& p, const SolveOptions& o, const DadoOptions& d)
      : p_(p), o_(o), d_(d), n_(p.layers.size()), chain_(!p.pairwise.empty() && n_ > 1) {
    threads_ = linalg::resolve_threads(o.threads);
    samples_ = std::max(d.samples, 1);
    double range_sum = 0;
    for (const auto& options : p.layers) {
      double lo = options[0].cost, hi = options[0].cost;
      for (const Option& opt : options) lo = std::min(lo, opt.cost), hi = std::max(hi, opt.cost);
      range_sum += hi - lo;
    }
    cost_scale_ = n_ > 0 && range_sum > 0 ? range_sum / static_cast<double>(n_) : 1.0;
    budget_ = static_cast<double>(std::max<int64_t>(p.budget, 1));
    byte_unit_ = budget_ / static_cast<double>(std::max<size_t>(n_, 1));
    // Tables: p_i(x) for the root (and every layer without pairwise terms),
    // p_i(x | a) as rows of K_i entries per parent option a otherwise.
    tables_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      const size_t rows = chain_ && i > 0 ? p.layers[i - 1].size() : 1;
      const double k = static_cast<double>(p.layers[i].size());
      tables_[i].assign(rows * p.layers[i].size(), 1.0 / k);
    }
  }

  Solution run() {
    const auto start = Clock::now();
    const Sweep sweep = sweep_hulls(p_, build_frontiers(p_, threads_));
    lambda_ = sweep.lambda * byte_unit_ / cost_scale_;
    incumbent_ = sweep.greedy;
    repair(p_, incumbent_);
    best_ = evaluate(p_, incumbent_);
    plans_.assign(static_cast<size_t>(samples_) * n_, 0);
    values_.assign(samples_, 0);
    bytes_.assign(samples_, 0);
    int64_t nodes = 0;
    for (int epoch = 0; epoch < d_.epochs; ++epoch) {
      if (o_.time_limit_s > 0 &&
          std::chrono::duration<double>(Clock::now() - start).count() > o_.time_limit_s)
        break;
      sample(epoch);
      nodes += samples_;
      double mean_bytes = 0;
      for (int s = 0; s < samples_; ++s) {
        mean_bytes += static_cast<double>(bytes_[s]) / samples_;
        if (bytes_[s] <= p_.budget && values_[s] < best_) {
          best_ = values_[s];
          incumbent_.assign(plan(s), plan(s) + n_);
        }
      }
      update(values_and_weights());
      lambda_ = std::max(0.0, lambda_ + d_.dual_step * (mean_bytes / budget_ - 1));
      consider_mode();
    }
    return heuristic_solution(p_, incumbent_, sweep.lambda, nodes, start);
  }

 private:
  int* plan(int s) { return plans_.data() + static_cast<size_t>(s) * n_; }
  size_t k(size_t i) const { return p_.layers[i].size(); }
  // f_i(x) of the Lagrangian, negated into a value to maximise, normalized.
  double unary(size_t i, int x) const {
    const Option& o = p_.layers[i][x];
    return -(o.cost / cost_scale_ + lambda_ * static_cast<double>(o.bytes) / byte_unit_);
  }
  // f_{i−1,i}(a, b): the pairwise term between layer i−1 and layer i.
  double edge(size_t i, int a, int b) const {
    return -p_.pairwise[i - 1][a * k(i) + b] / cost_scale_;
  }
  const double* row(size_t i, int parent) const {
    return tables_[i].data() + (chain_ && i > 0 ? parent * k(i) : 0);
  }

  // Ancestral sampling, one random stream per plan.
  void sample(int epoch) {
    const Rng base(o_.seed);
    parallel_for(samples_, threads_, [&](size_t begin, size_t end) {
      for (size_t s = begin; s < end; ++s) {
        Rng rng = base.split(static_cast<uint64_t>(epoch) * samples_ + s);
        int* x = plan(static_cast<int>(s));
        for (size_t i = 0; i < n_; ++i) {
          const double* pr = row(i, i > 0 ? x[i - 1] : 0);
          double u = rng.uniform(0, 1);
          int pick = static_cast<int>(k(i)) - 1;
          for (size_t j = 0; j + 1 < k(i); ++j) {
            u -= pr[j];
            if (u < 0) {
              pick = static_cast<int>(j);
              break;
            }
          }
          x[i] = pick;
        }
        Choice c(x, x + n_);
        values_[s] = evaluate(p_, c);
        bytes_[s] = choice_bytes(p_, c);
      }
    });
  }

  // Value functions leaves → root on the samples; returns each sample's
  // weight per factor, samples × layers.
  std::vector<double> values_and_weights() const {
    std::vector<double> q(static_cast<size_t>(samples_) * n_);
    std::vector<double> v_next, v;
    for (size_t i = n_; i-- > 0;) {
      v.assign(k(i), 0);
      for (size_t x = 0; x < k(i); ++x) v[x] = unary(i, static_cast<int>(x));
      if (chain_ && i + 1 < n_) {
        std::vector<double> sum(k(i), 0), count(k(i), 0);
        for (int s = 0; s < samples_; ++s) {
          const int* x = plans_.data() + static_cast<size_t>(s) * n_;
          sum[x[i]] += edge(i + 1, x[i], x[i + 1]) + v_next[x[i + 1]];
          count[x[i]] += 1;
        }
        for (size_t x = 0; x < k(i); ++x)
          if (count[x] > 0) v[x] += sum[x] / count[x];
      }
      for (int s = 0; s < samples_; ++s) {
        const int* x = plans_.data() + static_cast<size_t>(s) * n_;
        q[s * n_ + i] = v[x[i]] + (chain_ && i > 0 ? edge(i, x[i - 1], x[i]) : 0);
      }
      v_next.swap(v);
    }
    // exp(beta·z), z standardized per factor over the samples.
    for (size_t i = 0; i < n_; ++i) {
      double mean = 0, var = 0;
      for (int s = 0; s < samples_; ++s) mean += q[s * n_ + i] / samples_;
      for (int s = 0; s < samples_; ++s) var += (q[s * n_ + i] - mean) * (q[s * n_ + i] - mean);
      const double sd = std::sqrt(var / samples_);
      for (int s = 0; s < samples_; ++s) {
        const double z = sd > 1e-12 * (std::abs(mean) + 1e-300) ? (q[s * n_ + i] - mean) / sd : 0;
        q[s * n_ + i] = std::exp(d_.beta * z);
      }
    }
    return q;
  }

  // Value-weighted maximum likelihood per factor (per parent option for
  // conditional factors), Laplace smoothed and blended into the table.
  void update(const std::vector<double>& w) {
    for (size_t i = 0; i < n_; ++i) {
      const size_t rows = chain_ && i > 0 ? k(i - 1) : 1;
      std::vector<double> mass(rows * k(i), 0), total(rows, 0), count(rows, 0);
      for (int s = 0; s < samples_; ++s) {
        const int* x = plans_.data() + static_cast<size_t>(s) * n_;
        const size_t r = rows > 1 ? x[i - 1] : 0;
        mass[r * k(i) + x[i]] += w[s * n_ + i];
        total[r] += w[s * n_ + i];
        count[r] += 1;
      }
      const double alpha = d_.laplace / static_cast<double>(k(i));
      for (size_t r = 0; r < rows; ++r) {
        if (count[r] == 0) continue;
        double* t = tables_[i].data() + r * k(i);
        const double denom = count[r] + d_.laplace;
        for (size_t x = 0; x < k(i); ++x) {
          const double fitted = (mass[r * k(i) + x] * count[r] / total[r] + alpha) / denom;
          t[x] = (1 - d_.rate) * t[x] + d_.rate * fitted;
        }
      }
    }
  }

  // The distribution's most probable plan (Viterbi on the chain), repaired.
  void consider_mode() {
    if (n_ == 0) return;
    Choice mode(n_);
    if (!chain_) {
      for (size_t i = 0; i < n_; ++i)
        mode[i] = static_cast<int>(std::max_element(tables_[i].begin(), tables_[i].end()) -
                                   tables_[i].begin());
    } else {
      std::vector<std::vector<int>> back(n_);
      std::vector<double> score(k(0)), next;
      for (size_t x = 0; x < k(0); ++x) score[x] = std::log(tables_[0][x]);
      for (size_t i = 1; i < n_; ++i) {
        next.assign(k(i), -HUGE_VAL);
        back[i].assign(k(i), 0);
        for (size_t a = 0; a < k(i - 1); ++a)
          for (size_t b = 0; b < k(i); ++b) {
            const double v = score[a] + std::log(tables_[i][a * k(i) + b]);
            if (v > next[b]) next[b] = v, back[i][b] = static_cast<int>(a);
          }
        score.swap(next);
      }
      mode[n_ - 1] = static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
      for (size_t i = n_ - 1; i > 0; --i) mode[i - 1] = back[i][mode[i]];
    }
    repair(p_, mode);
    const double v = evaluate(p_, mode);
    if (v < best_) best_ = v, incumbent_ = mode;
  }

  const Problem& p_;
  const SolveOptions& o_;
  const DadoOptions& d_;
  size_t n_;
  bool chain_;
  int threads_ = 1, samples_ = 1;
  double cost_scale_ = 1, budget_ = 1, byte_unit_ = 1, lambda_ = 0;
  std::vector<std::vector<double>> tables_;
  std::vector<int> plans_;
  std::vector<double> values_;
  std::vector<int64_t> bytes_;
  Choice incumbent_;
  double best_ = 0;
};

}  // namespace

Solution solve_dado(const Problem& problem, const SolveOptions& options, const DadoOptions& dado) {
  check_feasible(problem);
  return Dado(problem, options, dado).run();
}

}  // namespace tailor::plan
