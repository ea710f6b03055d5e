// Analytic terms of a graph and the non-negative cost model fitted by Adam.
#include "tailor/tune/cost_model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tailor/core/error.h"
#include "tailor/decision/optim.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/schemes/matmul_into.h"

namespace tailor::tune {

namespace {

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= std::max<int64_t>(d, 0);
  return n;
}

bool op_is(const graph::Node& n, const char* op) {
  return n.op_type == op;
}

// Whether CompressedConv node n (input x [N, C, H, W], output y) on packed
// codes runs Winograd: 3×3, stride 1, where the dense conv's rule takes it
// (runtime::kernels::conv_default_algorithm), as the op decides.
bool compressed_conv_runs_winograd(const graph::Node& n, const std::vector<int64_t>* x,
                                   const std::vector<int64_t>* y) {
  if (!x || !y || x->size() != 4 || y->size() != 4) return false;
  const auto k = n.attr_ints("kernel_shape", {});
  const auto st = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || st.size() != 2 || dil.size() != 2 || pads.size() != 4) return false;
  runtime::kernels::Conv2dParams p;
  p.n = (*x)[0], p.c_in = (*x)[1], p.h = (*x)[2], p.w = (*x)[3], p.c_out = (*y)[1];
  p.kh = k[0], p.kw = k[1], p.stride_h = st[0], p.stride_w = st[1];
  p.dil_h = dil[0], p.dil_w = dil[1];
  p.pad_top = pads[0], p.pad_left = pads[1], p.pad_bottom = pads[2], p.pad_right = pads[3];
  if (p.out_h() != (*y)[2] || p.out_w() != (*y)[3]) return false;
  return runtime::kernels::conv_default_algorithm(p) == runtime::kernels::ConvAlgorithm::winograd;
}

// Bytes of the Winograd F(4×4, 3×3) weights of a 3×3 conv of `weights`
// floats: 36 points per 9-tap kernel, 4× the weights.
double winograd_weight_bytes(double weights) {
  return 4.0 * 4.0 * weights;
}

}  // namespace

MachineInfo MachineInfo::detect() {
  MachineInfo m;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l2 > 0) m.l2_bytes = l2;
  if (l3 > 0) m.llc_bytes = l3;
  return m;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {"overhead",
                                                 "gemm_flops_1e7_per_thread",
                                                 "elem_ops_1e7_per_thread",
                                                 "bytes_1e7",
                                                 "kernels_100",
                                                 "kernels_x_extra_threads_100",
                                                 "ws_over_l2_bytes_1e7",
                                                 "sgemm_calls_100",
                                                 "winograd_flops_1e7_per_thread",
                                                 "packed_weight_flops_1e7_per_thread",
                                                 "w8a8_flops_1e7_per_thread"};
  return names;
}

std::vector<double> graph_features(const graph::Model& model, int threads,
                                   const ValueShapes& shapes, const MachineInfo& machine) {
  const graph::Graph& g = model.graph;
  ValueShapes local;
  auto shape_of = [&](const std::string& v) -> const std::vector<int64_t>* {
    if (v.empty()) return nullptr;
    if (auto it = local.find(v); it != local.end()) return &it->second;
    if (auto it = shapes.find(v); it != shapes.end()) return &it->second;
    if (auto it = g.initializers.find(v); it != g.initializers.end()) {
      local[v] = std::vector<int64_t>(it->second.shape().begin(), it->second.shape().end());
      return &local[v];
    }
    return nullptr;
  };
  double gemm_flops = 0, elem = 0, bytes = 0, kernels = 0, over = 0, calls = 0, wino_flops = 0;
  double packed_flops = 0, w8a8_flops = 0;
  double extra_threads = 0;
  const double T_all = std::max(1, threads);
  for (const graph::Node& n : g.nodes) {
    kernels += 1;
    // An op the tuner pinned to one thread (node attribute "threads" = 1):
    // its work is not shared and it wakes no team.
    const double T = n.attr_int("threads", 0) == 1 ? 1.0 : T_all;
    extra_threads += T - 1;
    double in_bytes = 0;
    const std::vector<int64_t>* largest = nullptr;
    for (const auto& v : n.inputs)
      if (const auto* s = shape_of(v)) {
        in_bytes += 4.0 * static_cast<double>(numel(*s));
        if (!largest || numel(*s) > numel(*largest)) largest = s;
      }
    double out_bytes = 0, out_elems = 0;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& o = n.outputs[k];
      if (o.empty()) continue;
      const auto* s = shape_of(o);
      if (!s && largest) {
        std::vector<int64_t> guess = *largest;
        auto perm = n.attr_ints("perm", {});
        if (op_is(n, "Transpose") && perm.size() == guess.size()) {
          for (size_t i = 0; i < perm.size(); ++i)
            if (perm[i] >= 0 && perm[i] < static_cast<int64_t>(guess.size()))
              guess[i] = (*largest)[perm[i]];
        }
        local[o] = guess;
        s = &local[o];
      }
      if (s)
        out_elems += static_cast<double>(numel(*s)),
            out_bytes += 4.0 * static_cast<double>(numel(*s));
    }
    bytes += in_bytes + out_bytes;
    double ws = in_bytes + out_bytes;
    const bool conv = op_is(n, "Conv") || op_is(n, "FusedConv") || op_is(n, "ConvNhwc");
    const bool gemm =
        op_is(n, "Gemm") || op_is(n, "MatMul") || op_is(n, "FusedGemm") || op_is(n, "FusedMatMul");
    const auto* w = n.inputs.size() > 1 ? shape_of(n.inputs[1]) : nullptr;
    const graph::Attribute* enc = n.find("weight");
    if (n.domain == "ai.tailor" && (op_is(n, "CompressedConv") || op_is(n, "CompressedLinear")) &&
        enc && enc->kind == graph::Attribute::Kind::encoded && enc->encoded) {
      // A compressed layer: the scheme's multiply-adds for its out_elems/out
      // rows (pixels, or rows of X), on the W8A8 kernels (int8-a8, or
      // kernel_variant "w8a8") or on the others; the stored factors join
      // the working set.
      const schemes::Encoded& e = *enc->encoded;
      const auto rows = static_cast<int64_t>(out_elems) / std::max<int64_t>(1, e.out());
      const double flops = 2.0 * static_cast<double>(e.macs(rows)) / T;
      const bool a8 =
          schemes::w8a8_view(e).has_value() || n.attr_string("kernel_variant", "auto") == "w8a8";
      // Packed codes of a 3×3 conv that the runtime runs by Winograd on Ŵ
      // transformed per call (runtime/ops_compressed.cpp, the dense rule)
      // go at Winograd's rate, with the transformed weights in the working set.
      if (!a8 && op_is(n, "CompressedConv") && schemes::packed_view(e) &&
          compressed_conv_runs_winograd(n, shape_of(n.inputs[0]),
                                        n.outputs.empty() ? nullptr : shape_of(n.outputs[0]))) {
        wino_flops += flops;
        ws += winograd_weight_bytes(static_cast<double>(e.out() * e.in()));
      } else {
        (a8 ? w8a8_flops : packed_flops) += flops;
      }
      ws += static_cast<double>(e.bytes());
      calls += 1;
      over += std::max(0.0, ws - static_cast<double>(machine.l2_bytes));
      continue;
    }
    if (conv && w && w->size() >= 3) {
      int64_t red = 1;
      for (size_t i = 1; i < w->size(); ++i) red *= (*w)[i];
      const auto* x = shape_of(n.inputs[0]);
      const auto* y = n.outputs.empty() ? nullptr : shape_of(n.outputs[0]);
      // The kernel kind: Winograd F(4×4, 3×3) (by the node's "conv_algorithm"
      // or the runtime's rule) has its own rate and keeps 4× the 3×3
      // weights transformed; everything else is a GEMM.
      bool winograd = false;
      if (x && y && !op_is(n, "ConvNhwc")) {
        const ValueShapes xy = {{n.inputs[0], *x}, {n.outputs[0], *y}};
        if (const auto p = conv_params(g, n, xy); p && runtime::kernels::conv_winograd_eligible(*p))
          winograd = conv_algorithm_of(n, *p) == runtime::kernels::ConvAlgorithm::winograd;
      }
      if (winograd) {
        wino_flops += 2.0 * out_elems * static_cast<double>(red) / T;
        ws += winograd_weight_bytes(static_cast<double>(numel(*w)));
        calls += 1;
        over += std::max(0.0, ws - static_cast<double>(machine.l2_bytes));
        continue;
      }
      gemm_flops += 2.0 * out_elems * static_cast<double>(red) / T;
      const int64_t group = n.attr_int("group", 1);
      const bool depthwise = x && x->size() == 4 && group > 1 && group == (*x)[1];
      int64_t kspatial = 1;
      for (size_t i = 2; i < w->size(); ++i) kspatial *= (*w)[i];
      bool pointwise = kspatial == 1;
      for (int64_t v : n.attr_ints("strides", {})) pointwise = pointwise && v == 1;
      for (int64_t v : n.attr_ints("pads", {})) pointwise = pointwise && v == 0;
      if (!depthwise && y && y->size() == 4 && !op_is(n, "ConvNhwc")) {
        const int64_t cols = (*y)[2] * (*y)[3];
        const int64_t block = n.attr_int("column_block", 0);
        const int64_t bc = block > 0 ? std::min(block, cols) : cols;
        const double blocks = std::ceil(static_cast<double>(cols) / static_cast<double>(bc));
        calls += static_cast<double>(group) * blocks * static_cast<double>((*y)[0]);
        if (!pointwise)
          ws += 4.0 * static_cast<double>(red * bc);
        else
          ws = 4.0 * static_cast<double>(red * bc) * 2 + 4.0 * static_cast<double>(numel(*w));
      } else {
        calls += 1;
      }
    } else if (gemm && !n.inputs.empty()) {
      const auto* a = shape_of(n.inputs[0]);
      const double k = a && !a->empty() ? static_cast<double>(a->back()) : 1.0;
      gemm_flops += 2.0 * out_elems * k / T;
      calls += 1;
    } else {
      elem += out_elems / T;
    }
    over += std::max(0.0, ws - static_cast<double>(machine.l2_bytes));
  }
  return {1.0,
          gemm_flops / 1e7,
          elem / 1e7,
          bytes / 1e7,
          kernels / 100.0,
          extra_threads / 100.0,
          over / 1e7,
          calls / 100.0,
          wino_flops / 1e7,
          packed_flops / 1e7,
          w8a8_flops / 1e7};
}

double softplus(double x) {
  return x > 30 ? x : std::log1p(std::exp(x));
}

namespace {
/// |θ| bound of a cost model read or fitted: coefficients up to 10^6 ms per
/// feature unit, far past any fitted one.
constexpr double kMaxTheta = 1e6;
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double inv_softplus(double y) {
  return y > 30 ? y : std::log(std::expm1(y));
}
}  // namespace

CostModel::CostModel(size_t n, double initial) : theta_(n, inv_softplus(initial)) {
  if (!(initial > 0)) throw Error("cost model", "initial coefficient must be > 0");
}

CostModel CostModel::from_coefficients(const std::vector<double>& c) {
  CostModel m(c.size());
  for (size_t j = 0; j < c.size(); ++j) {
    if (!(c[j] > 0) || !std::isfinite(c[j]))
      throw Error("cost model", "coefficient " + std::to_string(j) + " must be finite and > 0");
    m.theta_[j] = inv_softplus(c[j]);
  }
  return m;
}

std::vector<double> CostModel::coefficients() const {
  std::vector<double> c;
  for (double t : theta_) c.push_back(softplus(t));
  return c;
}

double CostModel::predict(const std::vector<double>& f) const {
  if (f.size() != theta_.size())
    throw Error("cost model",
                "has " + std::to_string(theta_.size()) + " terms, got " + std::to_string(f.size()));
  double s = 1e-9;
  for (size_t j = 0; j < f.size(); ++j) s += softplus(theta_[j]) * f[j];
  return s;
}

double CostModel::fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                      int iterations, double lr, double anchor_weight,
                      const std::vector<double>* anchor) {
  if (X.size() != y.size()) throw Error("cost model", "fit: X and y differ in length");
  if (anchor && anchor->size() != theta_.size())
    throw Error("cost model", "fit: anchor has the wrong length");
  if (!anchor) anchor_weight = 0;
  for (double v : y)
    if (!(v > 0)) throw Error("cost model", "fit: latencies must be > 0");
  const size_t n = theta_.size();
  std::vector<double> grad(n);
  decision::AdamOptions adam_options;
  adam_options.learning_rate = lr;
  decision::Adam adam(n, adam_options);
  double loss = 0;
  if (X.empty()) return 0;
  for (int it = 1; it <= iterations + 1; ++it) {
    std::fill(grad.begin(), grad.end(), 0.0);
    loss = 0;
    for (size_t i = 0; i < X.size(); ++i) {
      const double p = predict(X[i]);
      const double r = std::log(p) - std::log(y[i]);
      loss += r * r;
      for (size_t j = 0; j < n; ++j) grad[j] += 2 * r / p * X[i][j] * sigmoid(theta_[j]);
    }
    loss /= static_cast<double>(X.size());
    for (size_t j = 0; anchor_weight > 0 && j < n; ++j) {
      const double dj = theta_[j] - (*anchor)[j];
      loss += anchor_weight * dj * dj;
    }
    if (it > iterations) break;  // the last pass only reports the loss
    for (size_t j = 0; j < n; ++j) {
      grad[j] /= static_cast<double>(X.size());
      if (anchor_weight > 0) grad[j] += 2 * anchor_weight * (theta_[j] - (*anchor)[j]);
    }
    const std::vector<double> before = theta_;
    adam.step(theta_, grad);
    // A step that leaves θ non-finite or out of range ends the fit at the
    // last good θ (what to_json writes must read back).
    if (!std::all_of(theta_.begin(), theta_.end(),
                     [](double t) { return std::fabs(t) <= kMaxTheta; })) {
      theta_ = before;
      break;
    }
  }
  return loss;
}

nlohmann::json CostModel::to_json(const std::vector<std::string>& names) const {
  return {{"terms", names}, {"theta", theta_}, {"coefficients", coefficients()}};
}

CostModel CostModel::from_json(const nlohmann::json& j, const std::vector<std::string>& names) {
  if (!j.is_object() || !j.contains("terms") || !j.contains("theta"))
    throw Error("cost model", "expected an object with \"terms\" and \"theta\"");
  if (j.at("terms").get<std::vector<std::string>>() != names)
    throw Error("cost model", "terms differ from this tailor's cost model terms");
  CostModel m(names.size());
  m.theta_ = j.at("theta").get<std::vector<double>>();
  if (m.theta_.size() != names.size()) throw Error("cost model", "theta has the wrong length");
  // Coefficients are softplus(θ) ≈ θ above 30: a θ of 1e308 made every
  // prediction inf and the fit NaN, written back as null.
  for (size_t i = 0; i < m.theta_.size(); ++i)
    if (!(std::fabs(m.theta_[i]) <= kMaxTheta))
      throw Error("cost model", "theta of term \"" + names[i] + "\" must be finite and within ±" +
                                    std::to_string(static_cast<int>(kMaxTheta)));
  return m;
}

namespace {
std::vector<double> ranks(const std::vector<double>& a) {
  std::vector<size_t> idx(a.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return a[x] < a[y]; });
  std::vector<double> r(a.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && a[idx[j + 1]] == a[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return r;
}
}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n,
               mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

}  // namespace tailor::tune
