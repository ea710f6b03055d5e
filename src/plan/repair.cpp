#include "repair.h"

#include <cmath>
#include <queue>
#include <tuple>

namespace tailor::plan {
namespace {

/// Best move of one layer: option and objective change per byte.
struct Move {
  double ratio;
  int layer;
  int option;
  uint32_t version;
  bool operator>(const Move& o) const {
    return std::tie(ratio, layer, option) > std::tie(o.ratio, o.layer, o.option);
  }
};

class Repairer {
 public:
  Repairer(const Problem& p, Choice& c) : p_(p), c_(c), version_(p.layers.size(), 0) {
    bytes_ = choice_bytes(p, c);
  }

  void run() {
    if (bytes_ > p_.budget) descend();
    ascend();
  }

 private:
  // Objective change when layer i moves from its option to j.
  double delta(size_t i, int j) const {
    const int cur = c_[i];
    double d = p_.layers[i][j].cost - p_.layers[i][cur].cost;
    if (p_.pairwise.empty()) return d;
    if (i > 0) {
      const auto& t = p_.pairwise[i - 1];
      const size_t k = p_.layers[i].size(), a = c_[i - 1];
      d += t[a * k + j] - t[a * k + cur];
    }
    if (i + 1 < c_.size()) {
      const auto& t = p_.pairwise[i];
      const size_t k = p_.layers[i + 1].size(), b = c_[i + 1];
      d += t[j * k + b] - t[cur * k + b];
    }
    return d;
  }

  // Cheapest downgrade of layer i, if it has one.
  bool best_down(size_t i, Move& m) const {
    const int64_t w = p_.layers[i][c_[i]].bytes;
    bool found = false;
    for (size_t j = 0; j < p_.layers[i].size(); ++j) {
      const int64_t saved = w - p_.layers[i][j].bytes;
      if (saved <= 0) continue;
      const double r = delta(i, static_cast<int>(j)) / static_cast<double>(saved);
      if (!found || r < m.ratio) {
        m = {r, static_cast<int>(i), static_cast<int>(j), version_[i]};
        found = true;
      }
    }
    return found;
  }

  // Best upgrade of layer i that fits in `room` and lowers the objective.
  bool best_up(size_t i, int64_t room, Move& m) const {
    const int64_t w = p_.layers[i][c_[i]].bytes;
    bool found = false;
    for (size_t j = 0; j < p_.layers[i].size(); ++j) {
      const int64_t extra = p_.layers[i][j].bytes - w;
      if (extra < 0 || extra > room) continue;
      const double d = delta(i, static_cast<int>(j));
      if (!(d < 0)) continue;
      const double r = extra > 0 ? d / static_cast<double>(extra) : -HUGE_VAL;
      if (!found || r < m.ratio) {
        m = {r, static_cast<int>(i), static_cast<int>(j), version_[i]};
        found = true;
      }
    }
    return found;
  }

  // Layers whose moves change when layer i changes.
  template <typename Fn>
  void touched(size_t i, Fn&& fn) {
    if (!p_.pairwise.empty() && i > 0) fn(i - 1);
    fn(i);
    if (!p_.pairwise.empty() && i + 1 < c_.size()) fn(i + 1);
  }

  void apply(const Move& m) {
    bytes_ += p_.layers[m.layer][m.option].bytes - p_.layers[m.layer][c_[m.layer]].bytes;
    c_[m.layer] = m.option;
  }

  void descend() {
    Move m{};
    std::vector<Move> moves;
    for (size_t i = 0; i < c_.size(); ++i)
      if (best_down(i, m)) moves.push_back(m);
    std::priority_queue<Move, std::vector<Move>, std::greater<>> queue(std::greater<>{},
                                                                       std::move(moves));
    while (bytes_ > p_.budget && !queue.empty()) {
      const Move top = queue.top();
      queue.pop();
      if (top.version != version_[top.layer]) continue;
      apply(top);
      touched(top.layer, [&](size_t i) {
        ++version_[i];
        if (best_down(i, m)) queue.push(m);
      });
    }
  }

  void ascend() {
    Move m{};
    std::vector<Move> moves;
    for (size_t i = 0; i < c_.size(); ++i)
      if (best_up(i, p_.budget - bytes_, m)) moves.push_back(m);
    std::priority_queue<Move, std::vector<Move>, std::greater<>> queue(std::greater<>{},
                                                                       std::move(moves));
    while (!queue.empty()) {
      const Move top = queue.top();
      queue.pop();
      if (top.version != version_[top.layer]) continue;
      const int64_t room = p_.budget - bytes_;
      const int64_t extra =
          p_.layers[top.layer][top.option].bytes - p_.layers[top.layer][c_[top.layer]].bytes;
      if (extra > room) {  // the room shrank since this move was found
        ++version_[top.layer];
        if (best_up(top.layer, room, m)) queue.push(m);
        continue;
      }
      apply(top);
      touched(top.layer, [&](size_t i) {
        ++version_[i];
        if (best_up(i, p_.budget - bytes_, m)) queue.push(m);
      });
    }
  }

  const Problem& p_;
  Choice& c_;
  std::vector<uint32_t> version_;
  int64_t bytes_ = 0;
};

}  // namespace

void repair(const Problem& problem, Choice& choice) {
  Repairer(problem, choice).run();
}

}  // namespace tailor::plan
