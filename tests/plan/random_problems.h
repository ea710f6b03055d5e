// Random allocation problems for the solver tests, drawn from tailor::Rng.
#pragma once

#include <cmath>
#include <functional>
#include <limits>

#include "tailor/core/rng.h"
#include "tailor/plan/problem.h"

namespace tailor::plan::fixtures {

/// `layers` layers of `options` options with bytes uniform in [1, max_bytes]
/// and costs uniform in [0, 1), unrelated to each other (so many options are
/// dominated), and a budget a fraction `tightness` of the way from the fewest
/// to the most bytes.
inline Problem random_problem(Rng& rng, int layers, int options, double tightness = -1,
                              int64_t max_bytes = 1000) {
  Problem p;
  p.source = "random.json";
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < layers; ++i) {
    std::vector<Option> opts;
    int64_t a = INT64_MAX, b = 0;
    for (int j = 0; j < options; ++j) {
      opts.push_back({1 + static_cast<int64_t>(rng.below(max_bytes)), rng.uniform(0, 1)});
      a = std::min(a, opts.back().bytes);
      b = std::max(b, opts.back().bytes);
    }
    lo += a;
    hi += b;
    p.layers.push_back(std::move(opts));
  }
  const double t = tightness >= 0 ? tightness : rng.uniform(0.05, 0.95);
  p.budget = lo + static_cast<int64_t>(t * static_cast<double>(hi - lo));
  return p;
}

/// A synthetic but realistic model to plan: `layers` weight matrices, either
/// cycling through the seven shapes of a 70B-class transformer block
/// (q, k, v, o, gate, up, down; many layers share byte counts) or, with
/// `distinct_shapes`, each of a random shape (every layer its own byte counts).
/// Each layer gets 16 candidates with DESIGN.md's byte formulas: dense, int8,
/// int4, int4-g32/64/128, int3, ternary, sparse-2:4 (dominated) and low rank
/// at seven ranks, errors from a per-layer difficulty and a power-law spectrum
/// (rank r keeps the energy of singular values k^−a, k ≤ r) with noise. The
/// objective is numel (DESIGN.md); the budget `bpw` bits per weight.
inline Problem synthetic_model(Rng& rng, int layers, bool distinct_shapes, double bpw = 4.5) {
  static const int64_t kShapes[7][2] = {{8192, 8192},  {1024, 8192},  {1024, 8192}, {8192, 8192},
                                        {28672, 8192}, {28672, 8192}, {8192, 28672}};
  Problem p;
  p.source = "synthetic.json";
  std::vector<std::vector<std::pair<int64_t, double>>> points;  // (bytes, rel_error)
  std::vector<double> numel;
  for (int i = 0; i < layers; ++i) {
    int64_t out = kShapes[i % 7][0], in = kShapes[i % 7][1];
    if (distinct_shapes) {
      out = 64 * (4 + static_cast<int64_t>(rng.below(252)));
      in = 64 * (4 + static_cast<int64_t>(rng.below(252)));
    }
    const int64_t n = out * in;
    const double q = std::exp(0.3 * rng.normal());  // how hard the layer quantizes
    const double a = rng.uniform(0.25, 1.0);        // spectral decay
    auto noisy = [&](double e) { return e * std::exp(0.05 * rng.normal()); };
    auto groups = [&](int64_t g) { return 2 * out * ((in + g - 1) / g); };
    std::vector<std::pair<int64_t, double>> c = {
        {4 * n, 0.0},
        {n + 2 * out, noisy(0.0045 * q)},
        {n / 2 + 2 * out, noisy(0.075 * q)},
        {n / 2 + groups(32), noisy(0.050 * q)},
        {n / 2 + groups(64), noisy(0.055 * q)},
        {n / 2 + groups(128), noisy(0.060 * q)},
        {(3 * n + 7) / 8 + 2 * out, noisy(0.16 * q)},
        {n / 4 + 2 * out, noisy(0.52 * std::sqrt(q))},
        {2 * n + (n / 2 * 2 + 7) / 8, noisy(0.45 * q)},
    };
    const int64_t m = std::min(out, in);
    double total = 0;
    for (int64_t k = 1; k <= m; ++k) total += std::pow(static_cast<double>(k), -2 * a);
    for (int64_t div : {2, 4, 8, 16, 32, 64, 128}) {
      const int64_t r = std::max<int64_t>(1, m / div);
      double kept = 0;
      for (int64_t k = 1; k <= r; ++k) kept += std::pow(static_cast<double>(k), -2 * a);
      c.push_back({4 * r * (out + in), noisy(std::sqrt(std::max(0.0, 1 - kept / total)))});
    }
    points.push_back(std::move(c));
    numel.push_back(static_cast<double>(n));
  }
  double total_numel = 0;
  for (double n : numel) total_numel += n;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<Option> opts;
    for (const auto& [bytes, err] : points[i])
      opts.push_back({bytes, numel[i] / total_numel * err * err});
    p.layers.push_back(std::move(opts));
  }
  p.budget = static_cast<int64_t>(bpw * total_numel / 8);
  return p;
}

/// Adds random pairwise terms in [0, scale) between adjacent layers.
inline void add_chain_terms(Rng& rng, Problem& p, double scale) {
  for (size_t i = 0; i + 1 < p.layers.size(); ++i) {
    std::vector<double> t(p.layers[i].size() * p.layers[i + 1].size());
    for (double& v : t) v = rng.uniform(0, scale);
    p.pairwise.push_back(std::move(t));
  }
}

/// The optimum by enumerating every plan (pairwise terms included); +inf when
/// no plan fits.
inline double brute_force(const Problem& p) {
  double best = std::numeric_limits<double>::infinity();
  Choice c(p.layers.size());
  std::function<void(size_t, int64_t, double)> visit = [&](size_t i, int64_t bytes, double cost) {
    if (bytes > p.budget) return;
    if (i == p.layers.size()) {
      best = std::min(best, cost);
      return;
    }
    for (size_t j = 0; j < p.layers[i].size(); ++j) {
      c[i] = static_cast<int>(j);
      double pair = 0;
      if (!p.pairwise.empty() && i > 0) pair = p.pairwise[i - 1][c[i - 1] * p.layers[i].size() + j];
      visit(i + 1, bytes + p.layers[i][j].bytes, cost + p.layers[i][j].cost + pair);
    }
  };
  visit(0, 0, 0.0);
  return best;
}

/// Relative tolerance of objective comparisons.
inline double tol(double v) {
  return 1e-12 * std::max(1.0, std::abs(v));
}

}  // namespace tailor::plan::fixtures
