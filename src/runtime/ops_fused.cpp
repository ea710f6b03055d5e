// Fused ops of the "ai.tailor" domain that the graph fusion pass
// (src/graph/passes/fusion.cpp) emits: FusedConv, FusedGemm, FusedMatMul
// (kernels with a bias + activation epilogue), LayerNormalization, Softmax
// (one axis) and FusedElementwise (a small program of elementwise steps run in
// one pass over the output). Each computes what the unfused ONNX nodes compute,
// with the same float operations in the same order where the kernels allow.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "op_util.h"
#include "tailor/runtime/fused.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

namespace k = kernels;

const float* f32_of(const OpContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::f32)
    ctx.fail(std::string(what) + " must be f32, got " + std::string(dtype_name(t.dtype())));
  return t.data<float>();
}

/// Conv with the activation in the kernel's epilogue (2-D and 1-D, NCHW).
class FusedConvKernel final : public Kernel {
 public:
  explicit FusedConvKernel(const KernelInit& init)
      : act_(activation_from_node(init.node)),
        auto_pad_(init.node.attr_string("auto_pad", "NOTSET")),
        strides_(init.node.attr_ints("strides", {})),
        pads_(init.node.attr_ints("pads", {})),
        dil_(init.node.attr_ints("dilations", {})),
        group_(init.node.attr_int("group", 1)),
        column_block_(init.node.attr_int("column_block", 0)) {
    if (column_block_ < 0) init.fail("column_block must be >= 0");
    if (auto_pad_ != "NOTSET" && auto_pad_ != "VALID" && auto_pad_ != "SAME_UPPER" &&
        auto_pad_ != "SAME_LOWER")
      init.fail("auto_pad '" + auto_pad_ + "' is invalid");
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const Tensor w = ctx.in(1).contiguous();
    const Tensor b = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    if ((x.rank() != 3 && x.rank() != 4) || w.rank() != x.rank())
      ctx.fail("input and weight must be rank 3 or 4");
    const size_t sd = x.rank() - 2;
    std::vector<int64_t> st = strides_.empty() ? std::vector<int64_t>(sd, 1) : strides_;
    std::vector<int64_t> dil = dil_.empty() ? std::vector<int64_t>(sd, 1) : dil_;
    if (st.size() != sd || dil.size() != sd)
      ctx.fail("strides/dilations do not match the input rank");
    std::vector<int64_t> pb(sd, 0), pe(sd, 0);
    for (size_t i = 0; i < sd; ++i) {
      const int64_t in = x.dim(2 + i), ks = w.dim(2 + i);
      if (auto_pad_ == "NOTSET") {
        if (!pads_.empty()) {
          if (pads_.size() != 2 * sd) ctx.fail("pads has the wrong length");
          pb[i] = pads_[i], pe[i] = pads_[i + sd];
        }
      } else if (auto_pad_ != "VALID") {
        const int64_t out = (in + st[i] - 1) / st[i];
        const int64_t total = std::max<int64_t>(0, (out - 1) * st[i] + dil[i] * (ks - 1) + 1 - in);
        pb[i] = auto_pad_ == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
      }
    }
    if (x.dim(1) != w.dim(1) * group_)
      ctx.fail("input channels differ from weight channels x group");
    if (b.defined() && b.numel() != w.dim(0)) ctx.fail("bias has the wrong size");
    k::Conv2dParams p;
    p.n = x.dim(0), p.c_in = x.dim(1), p.c_out = w.dim(0), p.groups = group_;
    p.column_block = column_block_;
    if (sd == 1) {
      p.h = 1, p.w = x.dim(2), p.kh = 1, p.kw = w.dim(2);
      p.stride_w = st[0], p.dil_w = dil[0], p.pad_left = pb[0], p.pad_right = pe[0];
    } else {
      p.h = x.dim(2), p.w = x.dim(3), p.kh = w.dim(2), p.kw = w.dim(3);
      p.stride_h = st[0], p.stride_w = st[1], p.dil_h = dil[0], p.dil_w = dil[1];
      p.pad_top = pb[0], p.pad_left = pb[1], p.pad_bottom = pe[0], p.pad_right = pe[1];
    }
    k::validate(p);
    Tensor y = ctx.alloc(DType::f32, sd == 1 ? Shape{p.n, p.c_out, p.out_w()}
                                             : Shape{p.n, p.c_out, p.out_h(), p.out_w()});
    const int64_t sn = k::conv2d_scratch_size(p);
    Tensor scratch = sn > 0 ? ctx.alloc(DType::f32, {sn}) : Tensor();
    k::conv2d(p, f32_of(ctx, x, "input"), f32_of(ctx, w, "weight"),
              b.defined() ? f32_of(ctx, b, "bias") : nullptr, y.mutable_data<float>(), act_,
              sn > 0 ? scratch.mutable_data<float>() : nullptr);
    ctx.outputs[0] = std::move(y);
  }

 private:
  k::Activation act_;
  std::string auto_pad_;
  std::vector<int64_t> strides_, pads_, dil_;
  int64_t group_;
  // Tuning attribute (kept from the Conv): Conv2dParams::column_block.
  int64_t column_block_;
};

class FusedGemmKernel final : public Kernel {
 public:
  explicit FusedGemmKernel(const KernelInit& init) : act_(activation_from_node(init.node)) {
    p_.trans_a = init.node.attr_int("transA", 0) != 0;
    p_.trans_b = init.node.attr_int("transB", 0) != 0;
    p_.alpha = init.node.attr_float("alpha", 1.0f);
    p_.beta = init.node.attr_float("beta", 1.0f);
  }
  void run(OpContext& ctx) override {
    const Tensor a = ctx.in(0).contiguous();
    const Tensor b = ctx.in(1).contiguous();
    if (a.rank() != 2 || b.rank() != 2) ctx.fail("A and B must be matrices");
    k::GemmParams p = p_;
    p.m = p.trans_a ? a.dim(1) : a.dim(0);
    p.k = p.trans_a ? a.dim(0) : a.dim(1);
    p.n = p.trans_b ? b.dim(0) : b.dim(1);
    if ((p.trans_b ? b.dim(1) : b.dim(0)) != p.k) ctx.fail("inner dimensions differ");
    const Tensor c = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    Tensor y = ctx.alloc(DType::f32, {p.m, p.n});
    k::gemm(p, f32_of(ctx, a, "A"), f32_of(ctx, b, "B"),
            c.defined() ? f32_of(ctx, c, "C") : nullptr,
            c.defined() ? std::span<const int64_t>(c.shape()) : std::span<const int64_t>(),
            y.mutable_data<float>(), act_);
    ctx.outputs[0] = std::move(y);
  }

 private:
  k::GemmParams p_;
  k::Activation act_;
};

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
    k::matmul(f32_of(ctx, a, "A"), a.shape(), f32_of(ctx, b, "B"), b.shape(), py);
    const int64_t n = shape.empty() ? 1 : shape.back();
    const int64_t rows = n == 0 ? 0 : y.numel() / n;
    const float* bias = nullptr;
    Tensor bc;
    if (ctx.has(2)) {
      bc = ctx.in(2).contiguous();
      if (bc.numel() != n) ctx.fail("bias must have " + std::to_string(n) + " elements");
      bias = f32_of(ctx, bc, "bias");
    }
#pragma omp parallel for schedule(static) if (y.numel() >= (1 << 16))
    for (int64_t r = 0; r < rows; ++r) {
      float* row = py + r * n;
      if (bias)
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      if (act_.kind != k::ActivationKind::none) k::apply_activation(act_, row, row, n);
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
  const float* scale = sc.defined() ? f32_of(ctx, sc, "scale") : nullptr;
  const float* bias = bc.defined() ? f32_of(ctx, bc, "bias") : nullptr;
  Tensor y = ctx.alloc(DType::f32, x.shape());
  const float* px = f32_of(ctx, x, "input");
  float* py = y.mutable_data<float>();
#pragma omp parallel for schedule(static) if (x.numel() >= (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
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
  }
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
  if (x.numel() > 0) k::softmax(f32_of(ctx, x, "input"), y.mutable_data<float>(), outer, n, inner);
  ctx.outputs[0] = std::move(y);
}

// ---- FusedElementwise ----

float step_unary(ElementwiseOp op, float x, float p0, float p1) {
  switch (op) {
    case ElementwiseOp::relu:
      return x > 0 ? x : 0.0f;
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
      return std::min(p1, std::max(p0, x));
    case ElementwiseOp::hard_sigmoid:
      return std::max(0.0f, std::min(1.0f, p0 * x + p1));
    case ElementwiseOp::hard_swish:
      return x * std::max(0.0f, std::min(1.0f, x * (1.0f / 6) + 0.5f));
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
    if (n_in_ < 1 || n_in_ > kMaxInputs)
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
  }

  void run(OpContext& ctx) override {
    std::array<Tensor, kMaxInputs> ins;
    Shape shape;
    for (int64_t i = 0; i < n_in_; ++i) {
      ins[static_cast<size_t>(i)] = ctx.in(static_cast<size_t>(i)).contiguous();
      if (ins[static_cast<size_t>(i)].dtype() != DType::f32) ctx.fail("inputs must be f32");
      shape = i == 0 ? ins[0].shape()
                     : broadcast_shapes(ctx, shape, ins[static_cast<size_t>(i)].shape());
    }
    const std::vector<float> zero1{0.f};
    const Tensor one = Tensor::from_f32({1}, zero1);
    std::array<const Tensor*, kMaxInputs> ptrs;
    for (size_t i = 0; i < kMaxInputs; ++i)
      ptrs[i] = static_cast<int64_t>(i) < n_in_ ? &ins[i] : &one;
    Tensor out = ctx.alloc(DType::f32, shape);
    float* po = out.mutable_data<float>();
    std::array<const float*, kMaxInputs> base;
    for (size_t i = 0; i < kMaxInputs; ++i) base[i] = ptrs[i]->data<float>();
    broadcast_runs<kMaxInputs>(ptrs, shape,
                               [&](int64_t oo, const std::array<int64_t, kMaxInputs>& off,
                                   const std::array<int64_t, kMaxInputs>& st,
                                   int64_t len) { run_span(base, off, st, po + oo, len); });
    ctx.outputs[0] = std::move(out);
  }

 private:
  static constexpr size_t kMaxInputs = kFusedElementwiseMaxInputs;
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
          TAILOR_BIN(x > y ? x : y) break;
        case ElementwiseOp::min:
          TAILOR_BIN(x < y ? x : y) break;
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
        for (int64_t i = 0; i < m; ++i) d[i] = a[i] > 0 ? a[i] : 0.0f;
        break;
      case ElementwiseOp::clip:
        for (int64_t i = 0; i < m; ++i) d[i] = std::min(p1, std::max(p0, a[i]));
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
        for (int64_t i = 0; i < m; ++i) d[i] = std::max(0.0f, std::min(1.0f, p0 * a[i] + p1));
        break;
      case ElementwiseOp::hard_swish:
        for (int64_t i = 0; i < m; ++i)
          d[i] = a[i] * std::max(0.0f, std::min(1.0f, a[i] * (1.0f / 6) + 0.5f));
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
  int64_t n_in_ = 0, regs_ = 0;
};

}  // namespace

kernels::Activation activation_from_node(const graph::Node& node) {
  const std::string name = node.attr_string("activation", "");
  const std::vector<float> p = node.attr_floats("activation_params", {});
  const float a = p.size() > 0 ? p[0] : 0.f, b = p.size() > 1 ? p[1] : 0.f;
  if (name.empty() || name == "None") return k::Activation::none();
  if (name == "Relu") return k::Activation::relu();
  if (name == "Clip") return k::Activation::clip(a, b);
  if (name == "HardSigmoid") return k::Activation::hard_sigmoid(a, b);
  if (name == "HardSwish") return k::Activation::hard_swish(a, b);
  if (name == "Sigmoid") return k::Activation::sigmoid();
  if (name == "LeakyRelu") return k::Activation::leaky_relu(a);
  if (name == "Tanh") return k::Activation::tanh();
  throw Error(node.label(), "activation '" + name + "' is unknown");
}

void register_fused_ops() {
  register_op("ai.tailor", "FusedConv",
              [](const KernelInit& init) { return std::make_unique<FusedConvKernel>(init); });
  register_op("ai.tailor", "FusedGemm",
              [](const KernelInit& init) { return std::make_unique<FusedGemmKernel>(init); });
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
  register_op("ai.tailor", "FusedElementwise", [](const KernelInit& init) {
    return std::make_unique<FusedElementwiseKernel>(init);
  });
}

}  // namespace tailor::runtime
