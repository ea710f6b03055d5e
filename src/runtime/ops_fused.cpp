// Fused ops of the "ai.tailor" domain that the graph fusion pass emits
// (src/graph/passes/fuse_*.h; contracts in tailor/graph/fused_ops.h): FusedMatMul (kernels with
// a bias + activation epilogue; FusedConv and FusedGemm are registered in ops_nn.cpp),
// LayerNormalization, Softmax (one axis), SqueezeExcite and FusedElementwise (a small program of
// elementwise steps run in one pass over the output). Each computes what the unfused ONNX nodes
// compute, with the same float operations in the same order where the kernels allow.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "op_util.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/fused.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

namespace k = kernels;

/// y = act(A @ B + bias), bias [n] over the last axis (may be absent).
class FusedMatMulKernel final : public Kernel {
 public:
  explicit FusedMatMulKernel(const KernelInit& init) : act_(activation_from_node(init.node)) {}
  void run(OpContext& ctx) override {
    const Tensor a = ctx.in(0).contiguous();
    const Tensor b = ctx.in(1).contiguous();
    const Shape shape = k::matmul_output_shape(a.shape(), b.shape());
    Tensor y = ctx.alloc(DType::f32, shape);
    float* py = y.mutable_data<float>();
    k::matmul(f32_ptr(ctx, a, "A"), a.shape(), f32_ptr(ctx, b, "B"), b.shape(), py);
    const int64_t n = shape.empty() ? 1 : shape.back();
    const int64_t rows = n == 0 ? 0 : y.numel() / n;
    const float* bias = nullptr;
    Tensor bc;
    if (ctx.has(2)) {
      bc = ctx.in(2).contiguous();
      if (bc.numel() != n) ctx.fail("bias must have " + std::to_string(n) + " elements");
      bias = f32_ptr(ctx, bc, "bias");
    }
    auto epilogue = [&](int64_t r) {
      float* row = py + r * n;
      if (bias)
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      if (act_.kind != k::ActivationKind::none) k::apply_activation(act_, row, row, n);
    };
    const bool any = bias != nullptr || act_.kind != k::ActivationKind::none;
    if (any && rows > 1 && k::detail::worth_threads_elements(y.numel())) {
      linalg::parallel_for(rows, true, [&](int64_t r) { epilogue(r); });
    } else if (any) {
      for (int64_t r = 0; r < rows; ++r) epilogue(r);
    }
    ctx.outputs[0] = std::move(y);
  }

 private:
  k::Activation act_;
};

/// Layer normalization over the last axis, computed as the decomposed ONNX
/// graph does: d = x − mean(x); y = d / sqrt(mean(d·d) + ε) · scale + bias.
void layer_norm_op(OpContext& ctx, float eps) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 1) ctx.fail("input must have rank >= 1");
  const int64_t n = x.dim(x.rank() - 1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const Tensor sc = ctx.has(1) ? ctx.in(1).contiguous() : Tensor();
  const Tensor bc = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
  if (sc.defined() && sc.numel() != n)
    ctx.fail("scale must have " + std::to_string(n) + " elements");
  if (bc.defined() && bc.numel() != n)
    ctx.fail("bias must have " + std::to_string(n) + " elements");
  const float* scale = sc.defined() ? f32_ptr(ctx, sc, "scale") : nullptr;
  const float* bias = bc.defined() ? f32_ptr(ctx, bc, "bias") : nullptr;
  Tensor y = ctx.alloc(DType::f32, x.shape());
  const float* px = f32_ptr(ctx, x, "input");
  float* py = y.mutable_data<float>();
  // Three passes over each row.
  linalg::parallel_for(rows, k::detail::worth_threads_elements(x.numel(), 3), [&](int64_t r) {
    const float* xr = px + r * n;
    float* yr = py + r * n;
    float s = 0;
    for (int64_t j = 0; j < n; ++j) s += xr[j];
    const float mean = static_cast<float>(static_cast<double>(s) / static_cast<double>(n));
    float v = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float d = xr[j] - mean;
      yr[j] = d;
      v += d * d;
    }
    const float var = static_cast<float>(static_cast<double>(v) / static_cast<double>(n));
    const float denom = std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      float t = yr[j] / denom;
      if (scale) t = t * scale[j];
      if (bias) t = t + bias[j];
      yr[j] = t;
    }
  });
  ctx.outputs[0] = std::move(y);
}

void softmax_op(OpContext& ctx, int64_t axis_attr) {
  const Tensor x = ctx.in(0).contiguous();
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, axis_attr, r);
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t s = x.dim(static_cast<size_t>(d));
    if (d < axis)
      outer *= s;
    else if (d == axis)
      n *= s;
    else
      inner *= s;
  }
  Tensor y = ctx.alloc(DType::f32, x.shape());
  if (x.numel() > 0) k::softmax(f32_ptr(ctx, x, "input"), y.mutable_data<float>(), outer, n, inner);
  ctx.outputs[0] = std::move(y);
}

/// SqueezeExcite (tailor/graph/fused_ops.h): the GlobalAveragePool, the two
/// 1×1 convs (k::conv2d, as FusedConv runs them) and the channel-scale Mul of
/// the unfused block, without their four dispatches, three intermediate
/// tensors and the Mul's general broadcasting.
class SqueezeExciteKernel final : public Kernel {
 public:
  explicit SqueezeExciteKernel(const KernelInit& init)
      : act_(activation_from_node(init.node)),
        gate_(activation_from_node(init.node, "gate_alpha", "gate_beta", "gate")) {
    if (init.node.inputs.size() != 5)
      init.fail("needs 5 inputs (X, W1, B1, W2, B2; B may be empty)");
    if (act_.has_affine() || gate_.has_affine()) init.fail("takes no pre_/post_ affine maps");
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const Tensor w1 = ctx.in(1).contiguous();
    const Tensor w2 = ctx.in(3).contiguous();
    const Tensor b1 = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    const Tensor b2 = ctx.has(4) ? ctx.in(4).contiguous() : Tensor();
    if (x.rank() != 4) ctx.fail("X must be [n, C, h, w], got " + shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), spatial = x.dim(2) * x.dim(3);
    if (w1.rank() != 4 || w1.dim(1) != c || w1.dim(2) != 1 || w1.dim(3) != 1 || w2.rank() != 4 ||
        w2.dim(0) != c || w2.dim(1) != w1.dim(0) || w2.dim(2) != 1 || w2.dim(3) != 1)
      ctx.fail("W1 must be [m, C, 1, 1] and W2 [C, m, 1, 1] for X " + shape_to_string(x.shape()) +
               ", got " + shape_to_string(w1.shape()) + " and " + shape_to_string(w2.shape()));
    const int64_t m = w1.dim(0);
    if (b1.defined() && b1.numel() != m) ctx.fail("B1 must have " + std::to_string(m) + " values");
    if (b2.defined() && b2.numel() != c) ctx.fail("B2 must have " + std::to_string(c) + " values");
    const float* px = f32_ptr(ctx, x, "X");
    Tensor y = ctx.alloc(DType::f32, x.shape());
    if (x.numel() == 0) {
      ctx.outputs[0] = std::move(y);
      return;
    }
    // pooled [n, C], hidden [n, m], scale [n, C] in one buffer.
    Tensor t = ctx.alloc(DType::f32, {n * (2 * c + m)});
    float* pooled = t.mutable_data<float>();
    float* hidden = pooled + n * c;
    float* scale = hidden + n * m;
    k::global_average_pool(n * c, spatial, px, pooled);
    k::Conv2dParams p;  // 1×1 on 1×1 planes
    p.n = n, p.h = 1, p.w = 1, p.c_in = c, p.c_out = m;
    k::conv2d(p, pooled, f32_ptr(ctx, w1, "W1"), b1.defined() ? f32_ptr(ctx, b1, "B1") : nullptr,
              hidden, act_, nullptr);
    p.c_in = m, p.c_out = c;
    k::conv2d(p, hidden, f32_ptr(ctx, w2, "W2"), b2.defined() ? f32_ptr(ctx, b2, "B2") : nullptr,
              scale, gate_, nullptr);
    float* py = y.mutable_data<float>();
    const int64_t planes = n * c;
    const auto plane = [&](int64_t pl) {
      const float s = scale[pl];
      const float* xp = px + pl * spatial;
      float* yp = py + pl * spatial;
      for (int64_t i = 0; i < spatial; ++i) yp[i] = xp[i] * s;
    };
    linalg::parallel_for(planes, k::detail::worth_threads_elements(x.numel()), plane);
    ctx.outputs[0] = std::move(y);
  }

 private:
  k::Activation act_, gate_;
};

// ---- FusedElementwise ----

float step_unary(ElementwiseOp op, float x, float p0, float p1) {
  switch (op) {
    case ElementwiseOp::relu:
      return max_nan(x, 0.0f);
    case ElementwiseOp::sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ElementwiseOp::tanh:
      return std::tanh(x);
    case ElementwiseOp::exp:
      return std::exp(x);
    case ElementwiseOp::log:
      return std::log(x);
    case ElementwiseOp::sqrt:
      return std::sqrt(x);
    case ElementwiseOp::reciprocal:
      return 1.0f / x;
    case ElementwiseOp::neg:
      return -x;
    case ElementwiseOp::abs:
      return x < 0 ? -x : x;
    case ElementwiseOp::clip:
      return min_nan(max_nan(x, p0), p1);
    case ElementwiseOp::hard_sigmoid:
      return min_nan(max_nan(p0 * x + p1, 0.0f), 1.0f);
    case ElementwiseOp::hard_swish:
      return x * min_nan(max_nan(x * (1.0f / 6) + 0.5f, 0.0f), 1.0f);
    case ElementwiseOp::leaky_relu:
      return x >= 0 ? x : p0 * x;
    case ElementwiseOp::square:
      return x * x;
    case ElementwiseOp::cube:
      return x * x * x;
    case ElementwiseOp::identity:
      return x;
    case ElementwiseOp::pow_const:
      return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(p0)));
    default:
      return x;
  }
}

class FusedElementwiseKernel final : public Kernel {
 public:
  explicit FusedElementwiseKernel(const KernelInit& init) {
    const std::vector<int64_t> prog = init.node.attr_ints("program", {});
    params_ = init.node.attr_floats("params", {});
    consts_ = init.node.attr_floats("constants", {});
    n_in_ = static_cast<int64_t>(init.node.inputs.size());
    if (n_in_ < 1 || n_in_ > static_cast<int64_t>(kMaxInputs))
      init.fail("needs 1 to " + std::to_string(kMaxInputs) + " inputs");
    if (prog.empty() || prog.size() % 4 != 0)
      init.fail("program must hold (op, dst, a, b) quadruples");
    if (params_.size() != prog.size() / 2) init.fail("params must hold 2 floats per step");
    for (size_t s = 0; s < prog.size(); s += 4) {
      Step st{static_cast<ElementwiseOp>(prog[s]),
              prog[s + 1],
              prog[s + 2],
              prog[s + 3],
              params_[s / 2],
              params_[s / 2 + 1]};
      if (prog[s] < 0 || prog[s] >= static_cast<int64_t>(ElementwiseOp::count))
        init.fail("unknown step op");
      if (st.dst != n_in_ + static_cast<int64_t>(steps_.size()))
        init.fail("steps must write registers in order");
      auto check = [&](int64_t r, bool used) {
        if (!used) return;
        if (r >= st.dst || (r < 0 && -r - 1 >= static_cast<int64_t>(consts_.size())))
          init.fail("step reads an undefined register or constant");
      };
      check(st.a, true);
      check(st.b, is_binary(st.op));
      steps_.push_back(st);
    }
    regs_ = n_in_ + static_cast<int64_t>(steps_.size());
    if (regs_ > kMaxRegs) init.fail("program too long");
    up_ = init.node.attr_ints("upsample", {});
    if (!up_.empty() && static_cast<int64_t>(up_.size()) != 2 * n_in_)
      init.fail("upsample must hold 2 factors per input");
    for (int64_t f : up_)
      if (f < 1) init.fail("upsample factors must be >= 1");
  }

  void run(OpContext& ctx) override {
    std::array<Tensor, kMaxInputs> held;  // copies of the inputs that are not contiguous
    std::array<const Tensor*, kMaxInputs> ptrs;
    ptrs.fill(&zero_);
    for (int64_t i = 0; i < n_in_; ++i) {
      const Tensor& x = dense_input(ctx, static_cast<size_t>(i), held[static_cast<size_t>(i)]);
      if (x.dtype() != DType::f32) ctx.fail("inputs must be f32");
      ptrs[static_cast<size_t>(i)] = &x;
    }
    if (!up_.empty()) {
      run_upsampled(ctx, ptrs);
      return;
    }
    // The output shape: the inputs' when they agree (no Shape copied), else their broadcast.
    const bool same =
        n_in_ > 0 && std::all_of(ptrs.begin() + 1, ptrs.begin() + n_in_,
                                 [&](const Tensor* x) { return x->shape() == ptrs[0]->shape(); });
    Shape broadcast;
    for (int64_t i = 0; i < n_in_ && !same; ++i)
      broadcast = i == 0 ? ptrs[0]->shape()
                         : broadcast_shapes(ctx, broadcast, ptrs[static_cast<size_t>(i)]->shape());
    const Shape& shape = same ? ptrs[0]->shape() : broadcast;
    std::array<const Tensor*, kMaxInputs>& ins = ptrs;
    Tensor out = ctx.alloc(DType::f32, shape);
    float* po = out.mutable_data<float>();
    std::array<const float*, kMaxInputs> base;
    for (size_t i = 0; i < kMaxInputs; ++i) base[i] = ptrs[i]->data<float>();
    // Inputs all of the output's size or of one element: flat blocks, in
    // parallel (broadcast_runs would see one run and stay serial).
    const int64_t total = out.numel();
    bool flat = true;
    for (int64_t i = 0; i < n_in_; ++i) {
      const int64_t ni = ins[static_cast<size_t>(i)]->numel();
      flat = flat && (ni == total || ni == 1);
    }
    if (flat) {
      constexpr int64_t kBlock = 16 * kChunk;
      const int64_t blocks = (total + kBlock - 1) / kBlock;
      auto block = [&](int64_t blk) {
        std::array<int64_t, kMaxInputs> off{}, st{};
        for (int64_t i = 0; i < n_in_; ++i) {
          const bool full = ins[static_cast<size_t>(i)]->numel() == total && total > 1;
          st[static_cast<size_t>(i)] = full ? 1 : 0;
          off[static_cast<size_t>(i)] = full ? blk * kBlock : 0;
        }
        run_span(base, off, st, po + blk * kBlock, std::min(kBlock, total - blk * kBlock));
      };
      // Each step is about one vector operation per element.
      linalg::parallel_for(
          blocks, k::detail::worth_threads_elements(total, static_cast<int64_t>(steps_.size())),
          block);
      ctx.outputs[0] = std::move(out);
      return;
    }
    broadcast_runs<kMaxInputs>(ptrs, shape,
                               [&](int64_t oo, const std::array<int64_t, kMaxInputs>& off,
                                   const std::array<int64_t, kMaxInputs>& st,
                                   int64_t len) { run_span(base, off, st, po + oo, len); });
    ctx.outputs[0] = std::move(out);
  }

 private:
  static constexpr size_t kMaxInputs = kFusedElementwiseMaxInputs;
  /// Stands in for the unused inputs (one element, read never).
  const Tensor zero_ = Tensor::zeros(DType::f32, {1});
  static constexpr int64_t kMaxRegs = kFusedElementwiseMaxInputs + kFusedElementwiseMaxSteps;
  static constexpr int64_t kChunk = 256;
  struct Step {
    ElementwiseOp op;
    int64_t dst, a, b;
    float p0, p1;
  };
  static bool is_binary(ElementwiseOp op) {
    return op >= ElementwiseOp::add && op <= ElementwiseOp::pow;
  }

  /// With upsampled inputs (attribute "upsample": input i read as pixel
  /// (y / fh, x / fw) of its rank-4 value, a nearest upsampling): output
  /// planes (n, c) of the rank-4 broadcast of the inputs' upsampled shapes,
  /// each upsampled input's plane repeated into a buffer (in cache, where a
  /// Resize wrote the whole upsampled tensor to memory and the next op read
  /// it back), the others read in place (advancing, or one value, by
  /// broadcasting).
  void run_upsampled(OpContext& ctx, const std::array<const Tensor*, kMaxInputs>& ins) const {
    std::array<Shape, kMaxInputs> dims;  // each input as rank 4, upsampled
    Shape shape;
    for (int64_t i = 0; i < n_in_; ++i) {
      const size_t u = static_cast<size_t>(i);
      Shape d = ins[u]->shape();
      if (d.size() > 4) ctx.fail("inputs of an upsampling program must be of rank <= 4");
      if (upsampled(i) && d.size() != 4) ctx.fail("an upsampled input must be of rank 4");
      if (upsampled(i)) d[2] *= up_[2 * u], d[3] *= up_[2 * u + 1];
      shape = i == 0 ? d : broadcast_shapes(ctx, shape, d);
      d.insert(d.begin(), 4 - d.size(), 1);
      dims[u] = d;
    }
    if (shape.size() != 4) ctx.fail("an upsampling program's output must be of rank 4");
    const int64_t nn = shape[0], cc = shape[1], hh = shape[2], ww = shape[3];
    // Per input: element strides of n, c, y and x in its stored tensor (0
    // where it broadcasts); an upsampled input's rows are its stored rows.
    std::array<std::array<int64_t, 4>, kMaxInputs> stride{};
    for (int64_t i = 0; i < n_in_; ++i) {
      const size_t u = static_cast<size_t>(i);
      const Shape& d = dims[u];
      const int64_t fh = upsampled(i) ? up_[2 * u] : 1, fw = upsampled(i) ? up_[2 * u + 1] : 1;
      const int64_t w = d[3] / fw, h = d[2] / fh;
      const std::array<int64_t, 4> dense = {d[1] * h * w, h * w, w, 1};
      for (size_t k = 0; k < 4; ++k) stride[u][k] = d[k] == 1 && shape[k] != 1 ? 0 : dense[k];
    }
    Tensor out = ctx.alloc(DType::f32, shape);
    float* po = out.mutable_data<float>();
    const int64_t planes = nn * cc, plane = hh * ww;
    if (planes == 0 || plane == 0) {
      ctx.outputs[0] = std::move(out);
      return;
    }
    // An input whose plane is read whole: dense (row stride ww, column
    // stride 1) or one value. Otherwise (broadcast along one of y, x) rows.
    bool whole_planes = true;
    for (int64_t i = 0; i < n_in_; ++i) {
      const std::array<int64_t, 4>& sd = stride[static_cast<size_t>(i)];
      whole_planes = whole_planes &&
                     (upsampled(i) || (sd[2] == ww && sd[3] == 1) || (sd[2] == 0 && sd[3] == 0));
    }
    // Work items: (n, c) planes, each upsampled input's plane repeated into
    // a buffer (a repeated row copied), then the program over the plane (or
    // row by row).
    linalg::parallel_for(
        planes,
        k::detail::worth_threads_elements(planes * plane, static_cast<int64_t>(steps_.size()) + 1),
        [&](int64_t item) {
          const int64_t n = item / cc, c = item % cc;
          thread_local std::vector<float> buf;
          buf.resize(static_cast<size_t>(n_in_ * plane));
          std::array<const float*, kMaxInputs> base;
          std::array<int64_t, kMaxInputs> off{}, st{};
          base.fill(zero_.data<float>());
          for (int64_t i = 0; i < n_in_; ++i) {
            const size_t u = static_cast<size_t>(i);
            const std::array<int64_t, 4>& sd = stride[u];
            const float* x = ins[u]->data<float>() + n * sd[0] + c * sd[1];
            if (!upsampled(i)) {
              base[u] = x;
              st[u] = sd[3] != 0 ? 1 : 0;
              continue;
            }
            // Upsampled rows or columns of one pixel broadcast (fh or fw is
            // then 1): row 0, or its one value along the row.
            const int64_t fh = dims[u][2] == 1 ? hh : up_[2 * u];
            const int64_t fw = up_[2 * u + 1], w = dims[u][3] == 1 ? 1 : ww / fw;
            float* pl = buf.data() + i * plane;
            for (int64_t y = 0; y < hh; ++y) {
              float* row = pl + y * ww;
              if (y % fh != 0) {
                std::copy(row - ww, row, row);
                continue;
              }
              const float* src = x + (y / fh) * sd[2];
              if (w == 1) {
                std::fill_n(row, ww, src[0]);
              } else if (fw == 2) {
                for (int64_t xs = 0; xs < w; ++xs) row[2 * xs] = row[2 * xs + 1] = src[xs];
              } else {
                for (int64_t xs = 0; xs < w; ++xs) std::fill_n(row + xs * fw, fw, src[xs]);
              }
            }
            base[u] = pl;
            st[u] = 1;
          }
          float* py = po + item * plane;
          if (whole_planes) {
            run_span(base, off, st, py, plane);
            return;
          }
          for (int64_t y = 0; y < hh; ++y) {
            std::array<int64_t, kMaxInputs> row_off{};
            for (int64_t i = 0; i < n_in_; ++i)
              row_off[static_cast<size_t>(i)] =
                  upsampled(i) ? y * ww : y * stride[static_cast<size_t>(i)][2];
            run_span(base, row_off, st, py + y * ww, ww);
          }
        });
    ctx.outputs[0] = std::move(out);
  }

  bool upsampled(int64_t i) const {
    const size_t u = static_cast<size_t>(i);
    return !up_.empty() && (up_[2 * u] != 1 || up_[2 * u + 1] != 1);
  }

  /// One run of `len` output elements: inputs advance (stride 1) or repeat
  /// one value (stride 0); steps run over chunks of kChunk, the last one
  /// writing straight into the output.
  void run_span(const std::array<const float*, kMaxInputs>& base,
                const std::array<int64_t, kMaxInputs>& off,
                const std::array<int64_t, kMaxInputs>& st, float* out, int64_t len) const {
    alignas(32) float buf[kMaxRegs][kChunk];
    const float* reg[kMaxRegs];
    for (int64_t i = 0; i < n_in_; ++i)
      if (st[static_cast<size_t>(i)] == 0) {
        std::fill(buf[i], buf[i] + std::min(kChunk, len),
                  base[static_cast<size_t>(i)][off[static_cast<size_t>(i)]]);
        reg[i] = buf[i];
      }
    for (int64_t c0 = 0; c0 < len; c0 += kChunk) {
      const int64_t m = std::min<int64_t>(kChunk, len - c0);
      for (int64_t i = 0; i < n_in_; ++i)
        if (st[static_cast<size_t>(i)] != 0)
          reg[i] = base[static_cast<size_t>(i)] + off[static_cast<size_t>(i)] + c0;
      for (size_t k = 0; k < steps_.size(); ++k) {
        const Step& s = steps_[k];
        float* d = k + 1 == steps_.size() ? out + c0 : buf[s.dst];
        eval(s, reg, d, m);
        reg[s.dst] = d;
      }
    }
  }

  void eval(const Step& s, const float* const* reg, float* d, int64_t m) const {
    const float* a = s.a >= 0 ? reg[s.a] : nullptr;
    const float av = s.a >= 0 ? 0.f : consts_[static_cast<size_t>(-s.a - 1)];
    if (is_binary(s.op)) {
      const float* b = s.b >= 0 ? reg[s.b] : nullptr;
      const float bv = s.b >= 0 ? 0.f : consts_[static_cast<size_t>(-s.b - 1)];
      // Operands as arrays or one repeated value; the same float operation either way.
#define TAILOR_BIN(EXPR)                     \
  if (a && b) {                              \
    for (int64_t i = 0; i < m; ++i) {        \
      const float x = a[i], y = b[i];        \
      d[i] = EXPR;                           \
    }                                        \
  } else if (a) {                            \
    for (int64_t i = 0; i < m; ++i) {        \
      const float x = a[i], y = bv;          \
      d[i] = EXPR;                           \
    }                                        \
  } else {                                   \
    for (int64_t i = 0; i < m; ++i) {        \
      const float x = av, y = b ? b[i] : bv; \
      d[i] = EXPR;                           \
    }                                        \
  }
      switch (s.op) {
        case ElementwiseOp::add:
          TAILOR_BIN(x + y) break;
        case ElementwiseOp::sub:
          TAILOR_BIN(x - y) break;
        case ElementwiseOp::mul:
          TAILOR_BIN(x * y) break;
        case ElementwiseOp::div:
          TAILOR_BIN(x / y) break;
        case ElementwiseOp::max:
          TAILOR_BIN(max_nan(x, y)) break;
        case ElementwiseOp::min:
          TAILOR_BIN(min_nan(x, y)) break;
        case ElementwiseOp::pow:
          TAILOR_BIN(static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y))))
          break;
        default:
          break;
      }
#undef TAILOR_BIN
      return;
    }
    float tmp[kChunk];
    if (!a) {
      std::fill(tmp, tmp + m, av);
      a = tmp;
    }
    const float p0 = s.p0, p1 = s.p1;
    switch (s.op) {
      case ElementwiseOp::relu:
        for (int64_t i = 0; i < m; ++i) d[i] = max_nan(a[i], 0.0f);
        break;
      case ElementwiseOp::clip:
        for (int64_t i = 0; i < m; ++i) d[i] = min_nan(max_nan(a[i], p0), p1);
        break;
      case ElementwiseOp::square:
        for (int64_t i = 0; i < m; ++i) d[i] = a[i] * a[i];
        break;
      case ElementwiseOp::cube:
        for (int64_t i = 0; i < m; ++i) d[i] = a[i] * a[i] * a[i];
        break;
      case ElementwiseOp::identity:
        for (int64_t i = 0; i < m; ++i) d[i] = a[i];
        break;
      case ElementwiseOp::neg:
        for (int64_t i = 0; i < m; ++i) d[i] = -a[i];
        break;
      case ElementwiseOp::abs:
        for (int64_t i = 0; i < m; ++i) d[i] = a[i] < 0 ? -a[i] : a[i];
        break;
      case ElementwiseOp::reciprocal:
        for (int64_t i = 0; i < m; ++i) d[i] = 1.0f / a[i];
        break;
      case ElementwiseOp::sqrt:
        for (int64_t i = 0; i < m; ++i) d[i] = std::sqrt(a[i]);
        break;
      case ElementwiseOp::hard_sigmoid:
        for (int64_t i = 0; i < m; ++i) d[i] = min_nan(max_nan(p0 * a[i] + p1, 0.0f), 1.0f);
        break;
      case ElementwiseOp::hard_swish:
        for (int64_t i = 0; i < m; ++i)
          d[i] = a[i] * min_nan(max_nan(a[i] * (1.0f / 6) + 0.5f, 0.0f), 1.0f);
        break;
      case ElementwiseOp::exp:
        k::exp(a, d, m);
        break;
      case ElementwiseOp::sigmoid:
        k::sigmoid(a, d, m);
        break;
      case ElementwiseOp::tanh:
        k::tanh(a, d, m);
        break;
      case ElementwiseOp::leaky_relu:
        for (int64_t i = 0; i < m; ++i) d[i] = a[i] >= 0 ? a[i] : p0 * a[i];
        break;
      default:
        for (int64_t i = 0; i < m; ++i) d[i] = step_unary(s.op, a[i], p0, p1);
    }
  }

  std::vector<float> params_, consts_;
  std::vector<Step> steps_;
  std::vector<int64_t> up_;  ///< "upsample": fh, fw per input, or empty
  int64_t n_in_ = 0, regs_ = 0;
};

/// The kernels' epilogue for a fused op's activation.
k::ActivationKind kernel_activation(graph::FusedActivation a) {
  switch (a) {
    case graph::FusedActivation::none:
      return k::ActivationKind::none;
    case graph::FusedActivation::relu:
      return k::ActivationKind::relu;
    case graph::FusedActivation::clip:
      return k::ActivationKind::clip;
    case graph::FusedActivation::hard_sigmoid:
      return k::ActivationKind::hard_sigmoid;
    case graph::FusedActivation::hard_swish:
      return k::ActivationKind::hard_swish;
    case graph::FusedActivation::sigmoid:
      return k::ActivationKind::sigmoid;
    case graph::FusedActivation::leaky_relu:
      return k::ActivationKind::leaky_relu;
    case graph::FusedActivation::tanh:
      return k::ActivationKind::tanh;
  }
  return k::ActivationKind::none;
}

}  // namespace

kernels::Activation activation_from_node(const graph::Node& node, const char* alpha,
                                         const char* beta, const char* name_attribute) {
  // The contract of tailor/graph/fused_ops.h: `activation` names a row of
  // graph::kFusedActivations, `alpha` and `beta` (or FusedGemm's names) its parameters.
  const std::string name = node.attr_string(name_attribute, "none");
  const graph::FusedActivationInfo* info = graph::fused_activation_named(name);
  if (!info) throw Error(node.label(), "activation '" + name + "' is unknown");
  k::Activation a{kernel_activation(info->kind), node.attr_float(alpha, 0.f),
                  node.attr_float(beta, 0.f)};
  // The affine maps around it (graph::kEpilogueAffineAttributes).
  a.pre_scale = node.attr_float("pre_scale", 1.f);
  a.pre_shift = node.attr_float("pre_shift", 0.f);
  a.post_scale = node.attr_float("post_scale", 1.f);
  a.post_shift = node.attr_float("post_shift", 0.f);
  if (a.has_affine() && a.kind == k::ActivationKind::none)
    throw Error(node.label(), "pre_/post_scale and _shift need an activation (got none)");
  return a;
}

void register_fused_ops() {
  register_op("ai.tailor", "FusedMatMul",
              [](const KernelInit& init) { return std::make_unique<FusedMatMulKernel>(init); });
  register_op("ai.tailor", "LayerNormalization", [](const KernelInit& init) {
    const float eps = init.node.attr_float("epsilon", 1e-5f);
    if (init.node.attr_int("axis", -1) != -1) init.fail("only axis -1 is supported");
    return make_kernel([eps](OpContext& ctx) { layer_norm_op(ctx, eps); });
  });
  register_op("ai.tailor", "Softmax", [](const KernelInit& init) {
    const int64_t axis = init.node.attr_int("axis", -1);
    return make_kernel([axis](OpContext& ctx) { softmax_op(ctx, axis); });
  });
  register_op("ai.tailor", "SqueezeExcite",
              [](const KernelInit& init) { return std::make_unique<SqueezeExciteKernel>(init); });
  register_op("ai.tailor", "FusedElementwise", [](const KernelInit& init) {
    return std::make_unique<FusedElementwiseKernel>(init);
  });
}

}  // namespace tailor::runtime
