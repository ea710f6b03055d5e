#include "hull.h"

#include <algorithm>
#include <numeric>

#include "parallel.h"

namespace tailor::plan {
namespace {

LayerFrontier frontier_of(const std::vector<Option>& options) {
  std::vector<int> order(options.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (options[a].bytes != options[b].bytes) return options[a].bytes < options[b].bytes;
    if (options[a].cost != options[b].cost) return options[a].cost < options[b].cost;
    return a < b;
  });
  LayerFrontier f;
  for (int j : order)
    if (f.pareto.empty() || options[j].cost < options[f.pareto.back()].cost) f.pareto.push_back(j);
  // Lower convex hull (Andrew's monotone chain); collinear points dropped.
  for (int j : f.pareto) {
    while (f.hull.size() >= 2) {
      const Option& a = options[f.hull[f.hull.size() - 2]];
      const Option& b = options[f.hull.back()];
      const Option& c = options[j];
      const double cross = static_cast<double>(b.bytes - a.bytes) * (c.cost - a.cost) -
                           (b.cost - a.cost) * static_cast<double>(c.bytes - a.bytes);
      if (cross > 0) break;
      f.hull.pop_back();
    }
    f.hull.push_back(j);
  }
  return f;
}

struct Segment {
  double slope;  // cost change per byte, < 0
  int layer;
  int from;  // position in the layer's hull
};

}  // namespace

std::vector<LayerFrontier> build_frontiers(const Problem& problem, int threads) {
  std::vector<LayerFrontier> out(problem.layers.size());
  parallel_for(problem.layers.size(), threads, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = frontier_of(problem.layers[i]);
  });
  return out;
}

Sweep sweep_hulls(const Problem& problem, const std::vector<LayerFrontier>& frontiers) {
  const size_t n = problem.layers.size();
  std::vector<Segment> segments;
  std::vector<int> position(n, 0);
  Sweep s;
  s.greedy.resize(n);
  int64_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int>& h = frontiers[i].hull;
    used += problem.layers[i][h[0]].bytes;
    s.greedy[i] = h[0];
    for (size_t k = 0; k + 1 < h.size(); ++k) {
      const Option& a = problem.layers[i][h[k]];
      const Option& b = problem.layers[i][h[k + 1]];
      segments.push_back({(b.cost - a.cost) / static_cast<double>(b.bytes - a.bytes),
                          static_cast<int>(i), static_cast<int>(k)});
    }
  }
  // Most cost saved per byte first; within a layer slopes increase, so a
  // layer's segments come in hull order.
  std::sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) {
    if (a.slope != b.slope) return a.slope < b.slope;
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.from < b.from;
  });
  int64_t room = problem.budget - used;
  for (const Segment& seg : segments) {
    ++s.segments;
    if (position[seg.layer] != seg.from) continue;  // an earlier upgrade did not fit
    const std::vector<int>& h = frontiers[seg.layer].hull;
    const int64_t extra = problem.layers[seg.layer][h[seg.from + 1]].bytes -
                          problem.layers[seg.layer][h[seg.from]].bytes;
    if (extra <= room) {
      room -= extra;
      position[seg.layer] = seg.from + 1;
      s.greedy[seg.layer] = h[seg.from + 1];
    } else if (!s.binding) {
      s.binding = true;
      s.lambda = -seg.slope;
    }
  }
  return s;
}

double lagrangian_bound(const Problem& problem, double lambda, std::vector<double>* minima) {
  double total = -lambda * static_cast<double>(problem.budget);
  if (minima) minima->resize(problem.layers.size());
  for (size_t i = 0; i < problem.layers.size(); ++i) {
    double m = problem.layers[i][0].cost + lambda * static_cast<double>(problem.layers[i][0].bytes);
    for (const Option& o : problem.layers[i])
      m = std::min(m, o.cost + lambda * static_cast<double>(o.bytes));
    if (minima) (*minima)[i] = m;
    total += m;
  }
  return total;
}

Solution heuristic_solution(const Problem& problem, Choice choice, double lambda, int64_t nodes,
                            std::chrono::steady_clock::time_point start) {
  Solution s;
  s.objective = evaluate(problem, choice);
  s.bytes = choice_bytes(problem, choice);
  s.choice = std::move(choice);
  if (problem.additive()) s.lower_bound = lagrangian_bound(problem, lambda, nullptr);
  s.nodes = nodes;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace tailor::plan
