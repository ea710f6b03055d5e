// Calibration statistics of weight layers (include/tailor/runtime/calibration.h).
#include "tailor/runtime/calibration.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <set>

#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/linalg/parallel.h"
#include "tailor/linalg/svd.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/executor.h"

namespace tailor::runtime {
namespace {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Rows of X per accumulation step of a conv (bounds the im2col copy to 4096·in).
constexpr int64_t kChunk = 4096;

/// The rows of `x` for `layer` as row-major f32 blocks [n, in], passed to
/// `sink(data, n)`: a MatMul/Gemm input in place, a Conv's im2col patches
/// `kChunk` at a time.
template <class Sink>
void for_row_blocks(const LayerInput& layer, const Tensor& x, Sink&& sink) {
  const int64_t in = layer.in;
  const float* p = x.data<float>();
  if (layer.kernel.empty()) {
    sink(p, x.numel() / in);
    return;
  }
  const int64_t nb = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t kh = layer.kernel[0], kw = layer.kernel[1], g = layer.group, cg = c / g;
  const auto& st = layer.strides;
  const auto& dl = layer.dilations;
  const auto& pd = layer.pads;
  const int64_t oh = (h + pd[0] + pd[2] - dl[0] * (kh - 1) - 1) / st[0] + 1;
  const int64_t ow = (w + pd[1] + pd[3] - dl[1] * (kw - 1) - 1) / st[1] + 1;
  if (oh < 1 || ow < 1) return;
  const int64_t total = nb * g * oh * ow;  // one row per (image, group, output pixel)
  MatF block;
  for (int64_t r0 = 0; r0 < total; r0 += kChunk) {
    const int64_t n = std::min(kChunk, total - r0);
    block.resize(n, in);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = r0 + i, ox = r % ow, oy = (r / ow) % oh, gi = (r / (ow * oh)) % g,
                    b = r / (ow * oh * g);
      float* dst = block.row(i).data();
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t ky = 0; ky < kh; ++ky) {
          const int64_t iy = oy * st[0] - pd[0] + ky * dl[0];
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t ix = ox * st[1] - pd[1] + kx * dl[1];
            *dst++ = (iy >= 0 && iy < h && ix >= 0 && ix < w)
                         ? p[((b * c + gi * cg + ci) * h + iy) * w + ix]
                         : 0.0f;
          }
        }
    }
    sink(block.data(), n);
  }
}

}  // namespace

std::vector<LayerInput> layer_inputs(const graph::Model& model) {
  const graph::Graph& gr = model.graph;
  std::map<std::string, const graph::WeightView*> by_name;
  const std::vector<graph::WeightView> all = graph::weights(model);
  for (const graph::WeightView& w : all)
    if (w.layout != WeightLayout::none) by_name[w.name] = &w;
  // A Cast of a weight (f16 models) stands for the weight.
  std::map<std::string, std::string> alias;
  for (const graph::Node& n : gr.nodes)
    if (n.domain.empty() && n.op_type == "Cast" && n.inputs.size() == 1 &&
        by_name.count(n.inputs[0]))
      alias[n.outputs[0]] = n.inputs[0];
  std::vector<LayerInput> out;
  for (const graph::Node& n : gr.nodes) {
    if (!n.domain.empty() || n.inputs.size() < 2 || n.inputs[0].empty()) continue;
    std::string w = n.inputs[1];
    if (alias.count(w)) w = alias.at(w);
    const auto it = by_name.find(w);
    if (it == by_name.end()) continue;
    const graph::WeightView& v = *it->second;
    LayerInput li{w, n.inputs[0], v.out_in_shape()[1], {}, {}, {}, {}, 1};
    const Shape& s = v.tensor.shape();
    if (n.op_type == "MatMul" && s.size() == 2 && v.layout == WeightLayout::in_out) {
      out.push_back(std::move(li));
    } else if (n.op_type == "Gemm" && s.size() == 2 && n.attr_int("transA", 0) == 0 &&
               (v.layout == WeightLayout::in_out || v.layout == WeightLayout::out_in)) {
      out.push_back(std::move(li));
    } else if (n.op_type == "Conv" && s.size() == 4 && v.layout == WeightLayout::conv &&
               n.attr_string("auto_pad", "NOTSET") == "NOTSET") {
      li.kernel = {s[2], s[3]};
      li.strides = n.attr_ints("strides", {1, 1});
      li.dilations = n.attr_ints("dilations", {1, 1});
      li.pads = n.attr_ints("pads", {0, 0, 0, 0});
      li.group = n.attr_int("group", 1);
      if (li.strides.size() == 2 && li.dilations.size() == 2 && li.pads.size() == 4 &&
          li.group >= 1)
        out.push_back(std::move(li));
    }
  }
  return out;
}

InputStats::InputStats(std::vector<LayerInput> layers, bool full) : layers_(std::move(layers)) {
  for (const LayerInput& l : layers_) {
    schemes::Gram& g = acc_[l.weight];
    g.in = l.in;
    if (full)
      full_[l.weight] = linalg::MatrixD::Zero(l.in, l.in);
    else
      g.h.assign(static_cast<size_t>(l.in), 0.0);
  }
}

std::vector<std::string> InputStats::values() const {
  std::vector<std::string> v;
  std::set<std::string> seen;
  for (const LayerInput& l : layers_)
    if (seen.insert(l.value).second) v.push_back(l.value);
  return v;
}

void InputStats::add(const std::map<std::string, Tensor>& values) {
  // Checked in order first (the first bad activation is the one named), then
  // accumulated one weight per item of a parallel loop: each weight's entries
  // in layers_ order, each its rows in order, so no sum depends on the thread
  // count. Costliest first (rows · in², in for the diagonal alone; a conv's
  // rows counted as its input pixels), for balance.
  struct Work {
    std::string weight;
    std::vector<std::pair<const LayerInput*, Tensor>> entries;
    double cost = 0;
  };
  std::vector<Work> work;
  std::map<std::string, size_t> at;
  for (const LayerInput& l : layers_) {
    const auto it = values.find(l.value);
    if (it == values.end()) continue;
    Tensor x = it->second.contiguous();
    const bool conv = !l.kernel.empty();
    const bool ok = x.dtype() == DType::f32 &&
                    (conv ? x.rank() == 4 && x.dim(1) % l.group == 0 &&
                                x.dim(1) / l.group * l.kernel[0] * l.kernel[1] == l.in
                          : x.rank() >= 1 && x.dim(x.rank() - 1) == l.in);
    check(ok, "calibration",
          fmt::format("activation '{}' of layer {} is {} {}, expected f32 rows of {} inputs",
                      l.value, l.weight, dtype_name(x.dtype()), shape_to_string(x.shape()), l.in));
    const auto [w, fresh] = at.emplace(l.weight, work.size());
    if (fresh) work.push_back({l.weight, {}, 0});
    Work& item = work[w->second];
    const double rows = conv ? static_cast<double>(x.numel()) / x.dim(1) * l.group
                             : static_cast<double>(x.numel()) / l.in;
    item.cost += rows * static_cast<double>(l.in) * (full_.empty() ? 1.0 : double(l.in));
    item.entries.emplace_back(&l, std::move(x));
  }
  std::stable_sort(work.begin(), work.end(),
                   [](const Work& a, const Work& b) { return a.cost > b.cost; });
  const auto accumulate = [&](const Work& item) {
    schemes::Gram& g = acc_.at(item.weight);
    linalg::MatrixD* h = full_.empty() ? nullptr : &full_.at(item.weight);
    for (const auto& [l, x] : item.entries)
      for_row_blocks(*l, x, [&](const float* rows, int64_t n) {
        g.rows += n;
        if (h) {
          linalg::gram_accumulate(rows, n, l->in, /*trans=*/true, *h);
        } else {
          for (int64_t r = 0; r < n; ++r)
            for (int64_t j = 0; j < l->in; ++j) {
              const double v = rows[r * l->in + j];
              g.h[static_cast<size_t>(j)] += v * v;
            }
        }
      });
  };
  // One item per thread of the team, each taking the next weight from a
  // shared counter (longest first: parallel_for's chunks of consecutive items
  // gave one thread ISNet's 14 costliest layers, 216 → 183 s on 2 cores).
  std::atomic<size_t> next{0};
  const auto team = std::min<int64_t>(linalg::threads(), static_cast<int64_t>(work.size()));
  linalg::parallel_for(team, team > 1, [&](int64_t) {
    for (size_t i; (i = next.fetch_add(1)) < work.size();) accumulate(work[i]);
  });
}

std::map<std::string, schemes::Gram> InputStats::grams() const {
  check(!full_.empty() || acc_.empty(), "calibration",
        "grams() needs InputStats built with full = true");
  std::map<std::string, schemes::Gram> out = acc_;
  for (auto& [w, g] : out) {
    // gram_accumulate wrote the lower triangle of the row-major H: mirror it.
    const linalg::MatrixD& m = full_.at(w);
    g.h.resize(static_cast<size_t>(g.in * g.in));
    for (int64_t i = 0; i < g.in; ++i)
      for (int64_t j = 0; j < g.in; ++j)
        g.h[static_cast<size_t>(i * g.in + j)] = j <= i ? m(i, j) : m(j, i);
  }
  return out;
}

std::map<std::string, schemes::Gram> InputStats::take_grams() {
  check(!full_.empty() || acc_.empty(), "calibration",
        "take_grams() needs InputStats built with full = true");
  std::map<std::string, schemes::Gram> out;
  for (auto it = acc_.begin(); it != acc_.end(); it = acc_.erase(it)) {
    schemes::Gram g = std::move(it->second);
    const auto m = full_.find(it->first);
    g.h.resize(static_cast<size_t>(g.in * g.in));
    for (int64_t i = 0; i < g.in; ++i)
      for (int64_t j = 0; j < g.in; ++j)
        g.h[static_cast<size_t>(i * g.in + j)] = j <= i ? m->second(i, j) : m->second(j, i);
    full_.erase(m);
    out[it->first] = std::move(g);
  }
  return out;
}

std::map<std::string, std::vector<float>> InputStats::mean_squares() const {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [w, g] : acc_) {
    std::vector<float> m(static_cast<size_t>(g.in), 0.0f);
    for (int64_t j = 0; j < g.in && g.rows > 0; ++j)
      m[static_cast<size_t>(j)] =
          static_cast<float>((full_.empty() ? g.h[static_cast<size_t>(j)] : full_.at(w)(j, j)) /
                             static_cast<double>(g.rows));
    out[w] = std::move(m);
  }
  return out;
}

std::map<std::string, schemes::Gram> gram(const graph::Model& model,
                                          const std::vector<std::map<std::string, Tensor>>& feeds,
                                          const std::set<std::string>* weights,
                                          const std::vector<std::string>* labels) {
  check(!feeds.empty(), "calibration", "no calibration inputs to collect statistics from");
  std::vector<LayerInput> layers = layer_inputs(model);
  if (weights)
    std::erase_if(layers, [&](const LayerInput& l) { return !weights->count(l.weight); });
  InputStats stats(std::move(layers), true);
  graph::Model m = model;
  const std::set<std::string> inputs(m.graph.inputs.begin(), m.graph.inputs.end());
  for (const std::string& v : stats.values())
    if (!inputs.count(v) &&
        std::find(m.graph.outputs.begin(), m.graph.outputs.end(), v) == m.graph.outputs.end())
      m.graph.outputs.push_back(v);
  Executor ex(std::move(m));
  for (size_t k = 0; k < feeds.size(); ++k) {
    const std::map<std::string, Tensor>& feed = feeds[k];
    std::map<std::string, Tensor> values;
    try {
      values = ex.run(feed);
    } catch (const Error& e) {  // a node's error on this feed: name the feed too
      if (!labels || k >= labels->size()) throw;
      throw Error((*labels)[k], e.what());
    }
    for (const auto& [name, t] : feed)
      if (inputs.count(name)) values.emplace(name, t);
    stats.add(values);
  }
  std::map<std::string, schemes::Gram> out = stats.take_grams();
  for (const auto& [w, g] : out)
    for (double v : g.h)
      check(std::isfinite(v), "calibration",
            fmt::format("layer {}: calibration activations hold NaN or Inf", w));
  return out;
}

}  // namespace tailor::runtime
