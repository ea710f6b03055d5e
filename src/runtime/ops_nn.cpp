// Neural-network ops (onnx/docs/Operators.md) on the f32 NCHW kernels of
// src/runtime/kernels: Conv, ConvTranspose, MatMul, Gemm, BatchNormalization,
// MaxPool, AveragePool, GlobalAveragePool, Resize/Upsample, LSTM.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

#include "op_util.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/fused.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

namespace k = kernels;

/// Spatial attributes shared by Conv, ConvTranspose and the pools.
struct Window {
  std::string auto_pad;
  std::vector<int64_t> kernel, strides, pads, dilations;

  static Window read(const KernelInit& init) {
    Window w;
    w.auto_pad = init.node.attr_string("auto_pad", "NOTSET");
    w.kernel = init.node.attr_ints("kernel_shape", {});
    w.strides = init.node.attr_ints("strides", {});
    w.pads = init.node.attr_ints("pads", {});
    w.dilations = init.node.attr_ints("dilations", {});
    if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" && w.auto_pad != "SAME_UPPER" &&
        w.auto_pad != "SAME_LOWER")
      init.fail("auto_pad '" + w.auto_pad + "' is invalid");
    return w;
  }

  /// Per-dim (stride, dilation, pad_begin, pad_end) for input sizes `in` and kernel `ks`.
  void resolve(const OpContext& ctx, const std::vector<int64_t>& in, const std::vector<int64_t>& ks,
               std::vector<int64_t>& st, std::vector<int64_t>& dil, std::vector<int64_t>& pb,
               std::vector<int64_t>& pe) const {
    const size_t n = in.size();
    st = strides.empty() ? std::vector<int64_t>(n, 1) : strides;
    dil = dilations.empty() ? std::vector<int64_t>(n, 1) : dilations;
    if (st.size() != n || dil.size() != n)
      ctx.fail("strides/dilations do not match the input rank");
    pb.assign(n, 0);
    pe.assign(n, 0);
    if (auto_pad == "NOTSET") {
      if (!pads.empty()) {
        if (pads.size() != 2 * n) ctx.fail("pads has the wrong length");
        for (size_t i = 0; i < n; ++i) pb[i] = pads[i], pe[i] = pads[i + n];
      }
    } else if (auto_pad != "VALID") {
      for (size_t i = 0; i < n; ++i) {
        const int64_t out = (in[i] + st[i] - 1) / st[i];
        const int64_t total =
            std::max<int64_t>(0, (out - 1) * st[i] + dil[i] * (ks[i] - 1) + 1 - in[i]);
        pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
      }
    }
  }
};

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelInit& init)
      : win_(Window::read(init)),
        group_(init.node.attr_int("group", 1)),
        // Tuning attribute (not ONNX): Conv2dParams::column_block.
        column_block_(init.node.attr_int("column_block", 0)),
        // Tuning attributes (not ONNX, set by `tailor tune`): the conv
        // algorithm (kernels::ConvAlgorithm, conv_algorithm.h) and "threads" = 1 to run this
        // op on the calling thread alone (0, the default: the executor's count).
        threads_(init.node.attr_int("threads", 0)) {
    if (column_block_ < 0) init.fail("column_block must be >= 0");
    if (threads_ != 0 && threads_ != 1) init.fail("threads must be 0 or 1");
    const std::string algo = init.node.attr_string("conv_algorithm", "auto");
    if (algo == "gemm")
      algorithm_ = k::ConvAlgorithm::gemm;
    else if (algo == "winograd")
      algorithm_ = k::ConvAlgorithm::winograd;
    else if (algo != "auto")
      init.fail("conv_algorithm must be auto, gemm or winograd, got \"" + algo + "\"");
    // FusedConv (ai.tailor, contract in tailor/graph/fused_ops.h): the epilogue's activation.
    act_ = activation_from_node(init.node);
    pack_constant_weight(init);
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    // The packed copy serves only the constant it was packed from: a run that
    // feeds another weight (CutRun::finish replacing the initializer, as the
    // output-damage pass does) convolves with that weight.
    const bool packed_weight = packed_source_ != nullptr && ctx.in(1).raw() == packed_source_;
    const Tensor w = ctx.in(1).contiguous();
    const Tensor b = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    const k::Conv2dParams p = params_for(ctx, x, w);
    const float* bias = b.defined() ? f32_ptr(ctx, b, "bias") : nullptr;
    if (b.defined() && b.numel() != w.dim(0)) ctx.fail("bias has the wrong size");
    Shape out_shape =
        x.rank() == 3 ? Shape{p.n, p.c_out, p.out_w()} : Shape{p.n, p.c_out, p.out_h(), p.out_w()};
    Tensor y = ctx.alloc(DType::f32, out_shape);
    const int64_t scratch_n = k::conv2d_scratch_size(p);
    Tensor scratch = scratch_n > 0 ? ctx.alloc(DType::f32, {scratch_n}) : Tensor();
    std::optional<linalg::ThreadLimit> serial;
    if (threads_ == 1) serial.emplace(1);
    k::conv2d(p, algorithm_, f32_ptr(ctx, x, "input"), f32_ptr(ctx, w, "weight"), bias,
              y.mutable_data<float>(), act_,
              scratch_n > 0 ? scratch.mutable_data<float>() : nullptr,
              packed_weight ? &packed_ : nullptr);
    ctx.outputs[0] = std::move(y);
  }

 private:
  // The kernel parameters for input x and weight w: resolved once per input
  // shape, not every run, and copied out. CutRuns of one executor run this
  // kernel on several threads at once with inputs of different shapes (the
  // output-damage pass on OCR lines of different widths), so the cached
  // parameters are read and replaced under mu_ only.
  k::Conv2dParams params_for(const OpContext& ctx, const Tensor& x, const Tensor& w) {
    std::lock_guard<std::mutex> lock(mu_);
    if (x.shape() != params_x_ || w.shape() != params_w_) resolve(ctx, x, w);
    return params_;
  }

  // Resolves and checks the parameters for x and w into params_ (mu_ held).
  void resolve(const OpContext& ctx, const Tensor& x, const Tensor& w) {
    if (x.rank() != 3 && x.rank() != 4)
      ctx.fail("input must be rank 3 or 4, got " + shape_to_string(x.shape()));
    if (w.rank() != x.rank()) ctx.fail("weight rank differs from the input rank");
    const size_t sd = x.rank() - 2;
    std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
    std::vector<int64_t> ks(w.shape().begin() + 2, w.shape().end());
    if (!win_.kernel.empty() && win_.kernel != ks)
      ctx.fail("kernel_shape disagrees with the weight");
    if (x.dim(1) != w.dim(1) * group_)
      ctx.fail("input channels " + std::to_string(x.dim(1)) + " != weight " +
               std::to_string(w.dim(1)) + " x group " + std::to_string(group_));
    std::vector<int64_t> st, dil, pb, pe;
    win_.resolve(ctx, in, ks, st, dil, pb, pe);
    k::Conv2dParams p;
    p.n = x.dim(0);
    p.c_in = x.dim(1);
    p.c_out = w.dim(0);
    p.groups = group_;
    p.column_block = column_block_;
    if (sd == 1) {
      p.h = 1, p.w = in[0], p.kh = 1, p.kw = ks[0];
      p.stride_w = st[0], p.dil_w = dil[0], p.pad_left = pb[0], p.pad_right = pe[0];
    } else {
      p.h = in[0], p.w = in[1], p.kh = ks[0], p.kw = ks[1];
      p.stride_h = st[0], p.stride_w = st[1], p.dil_h = dil[0], p.dil_w = dil[1];
      p.pad_top = pb[0], p.pad_left = pb[1], p.pad_bottom = pe[0], p.pad_right = pe[1];
    }
    k::validate(p);
    params_ = p;
    params_x_ = x.shape();
    params_w_ = w.shape();
  }

  // A constant f32 weight (an initializer) is packed for the conv kernel
  // here, once; conv2d uses it when it serves the run's parameters.
  void pack_constant_weight(const KernelInit& init) {
    const Tensor* w = init.constant(1);
    if (w == nullptr || w->dtype() != DType::f32 || (w->rank() != 3 && w->rank() != 4)) return;
    if (win_.auto_pad != "NOTSET" && win_.auto_pad != "VALID") return;  // pads depend on x
    const size_t sd = w->rank() - 2;
    const auto at = [](const std::vector<int64_t>& v, size_t i, int64_t dflt) {
      return i < v.size() ? v[i] : dflt;
    };
    k::Conv2dParams p;
    p.c_out = w->dim(0);
    p.c_in = w->dim(1) * group_;
    p.groups = group_;
    p.kh = sd == 1 ? 1 : w->dim(2);
    p.kw = w->dim(w->rank() - 1);
    if (sd == 2) {
      p.stride_h = at(win_.strides, 0, 1), p.stride_w = at(win_.strides, 1, 1);
      p.dil_h = at(win_.dilations, 0, 1), p.dil_w = at(win_.dilations, 1, 1);
      p.pad_top = at(win_.pads, 0, 0), p.pad_left = at(win_.pads, 1, 0);
      p.pad_bottom = at(win_.pads, 2, 0), p.pad_right = at(win_.pads, 3, 0);
    } else {
      p.stride_w = at(win_.strides, 0, 1), p.dil_w = at(win_.dilations, 0, 1);
      p.pad_left = at(win_.pads, 0, 0), p.pad_right = at(win_.pads, 1, 0);
    }
    if (p.c_out < 1 || group_ < 1 || p.c_out % group_ != 0) return;  // run() reports it
    const Tensor wc = w->contiguous();
    packed_ = k::pack_conv2d_weights(p, wc.data<float>());
    packed_source_ = w->raw();
  }

  Window win_;
  int64_t group_;
  k::Activation act_;
  int64_t column_block_;
  int64_t threads_;
  k::ConvAlgorithm algorithm_ = k::ConvAlgorithm::automatic;
  k::PackedConvWeights packed_;
  const std::byte* packed_source_ = nullptr;  // the constant packed_ was packed from
  // resolve()'s result and the shapes it holds for (empty: none yet).
  std::mutex mu_;  // guards params_, params_x_ and params_w_
  k::Conv2dParams params_;
  Shape params_x_, params_w_;
};

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInit& init)
      : win_(Window::read(init)),
        group_(init.node.attr_int("group", 1)),
        out_pad_(init.node.attr_ints("output_padding", {})),
        out_shape_(init.node.attr_ints("output_shape", {})),
        act_(activation_from_node(init.node)) {}
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const Tensor w = ctx.in(1).contiguous();
    const Tensor b = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    if (x.rank() != 4 || w.rank() != 4)
      ctx.fail("only 2-D ConvTranspose (rank-4 input and weight) is supported");
    k::ConvTranspose2dParams p;
    p.n = x.dim(0), p.c_in = x.dim(1), p.h = x.dim(2), p.w = x.dim(3);
    p.c_out = w.dim(1) * group_, p.kh = w.dim(2), p.kw = w.dim(3), p.groups = group_;
    if (w.dim(0) != p.c_in) ctx.fail("weight's first dim must equal the input channels");
    const std::vector<int64_t> st =
        win_.strides.empty() ? std::vector<int64_t>{1, 1} : win_.strides;
    const std::vector<int64_t> dil =
        win_.dilations.empty() ? std::vector<int64_t>{1, 1} : win_.dilations;
    const std::vector<int64_t> op = out_pad_.empty() ? std::vector<int64_t>{0, 0} : out_pad_;
    if (st.size() != 2 || dil.size() != 2 || op.size() != 2)
      ctx.fail("attributes must have 2 spatial values");
    p.stride_h = st[0], p.stride_w = st[1], p.dil_h = dil[0], p.dil_w = dil[1];
    p.out_pad_h = op[0], p.out_pad_w = op[1];
    const int64_t in[2] = {p.h, p.w}, ks[2] = {p.kh, p.kw};
    int64_t pb[2] = {0, 0}, pe[2] = {0, 0};
    if (!out_shape_.empty() || (win_.auto_pad == "SAME_UPPER" || win_.auto_pad == "SAME_LOWER")) {
      for (int i = 0; i < 2; ++i) {
        const int64_t target = !out_shape_.empty()
                                   ? out_shape_[out_shape_.size() - 2 + static_cast<size_t>(i)]
                                   : in[i] * st[static_cast<size_t>(i)];
        const int64_t total = st[static_cast<size_t>(i)] * (in[i] - 1) +
                              op[static_cast<size_t>(i)] +
                              ((ks[i] - 1) * dil[static_cast<size_t>(i)] + 1) - target;
        const bool upper = win_.auto_pad != "SAME_LOWER";
        pb[i] = upper ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
      }
    } else if (!win_.pads.empty()) {
      if (win_.pads.size() != 4) ctx.fail("pads must have 4 values");
      pb[0] = win_.pads[0], pb[1] = win_.pads[1], pe[0] = win_.pads[2], pe[1] = win_.pads[3];
    }
    p.pad_top = pb[0], p.pad_left = pb[1], p.pad_bottom = pe[0], p.pad_right = pe[1];
    k::validate(p);
    Tensor y = ctx.alloc(DType::f32, {p.n, p.c_out, p.out_h(), p.out_w()});
    const int64_t sn = k::conv_transpose2d_scratch_size(p);
    Tensor scratch = sn > 0 ? ctx.alloc(DType::f32, {sn}) : Tensor();
    k::conv_transpose2d(p, f32_ptr(ctx, x, "input"), f32_ptr(ctx, w, "weight"),
                        b.defined() ? f32_ptr(ctx, b, "bias") : nullptr, y.mutable_data<float>(),
                        act_, sn > 0 ? scratch.mutable_data<float>() : nullptr);
    ctx.outputs[0] = std::move(y);
  }

 private:
  Window win_;
  int64_t group_;
  std::vector<int64_t> out_pad_, out_shape_;
  // FusedConvTranspose (ai.tailor, tailor/graph/fused_ops.h): the epilogue's activation.
  k::Activation act_;
};

void matmul_op(OpContext& ctx) {
  const Tensor a = ctx.in(0).contiguous();
  const Tensor b = ctx.in(1).contiguous();
  const Shape shape = k::matmul_output_shape(a.shape(), b.shape());
  Tensor y = ctx.alloc(DType::f32, shape);
  k::matmul(f32_ptr(ctx, a, "A"), a.shape(), f32_ptr(ctx, b, "B"), b.shape(),
            y.mutable_data<float>());
  ctx.outputs[0] = std::move(y);
}

/// Gemm, and ai.tailor FusedGemm (the same with `act` applied in the epilogue).
class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const KernelInit& init, k::Activation act = {}) : act_(act) {
    p_.trans_a = init.node.attr_int("transA", 0) != 0;
    p_.trans_b = init.node.attr_int("transB", 0) != 0;
    p_.alpha = init.node.attr_float("alpha", 1.0f);
    p_.beta = init.node.attr_float("beta", 1.0f);
  }
  void run(OpContext& ctx) override {
    Tensor held[3];
    const Tensor& a = dense_input(ctx, 0, held[0]);
    const Tensor& b = dense_input(ctx, 1, held[1]);
    if (a.rank() != 2 || b.rank() != 2) ctx.fail("A and B must be matrices");
    k::GemmParams p = p_;
    p.m = p.trans_a ? a.dim(1) : a.dim(0);
    p.k = p.trans_a ? a.dim(0) : a.dim(1);
    p.n = p.trans_b ? b.dim(0) : b.dim(1);
    const int64_t kb = p.trans_b ? b.dim(1) : b.dim(0);
    if (kb != p.k)
      ctx.fail("inner dimensions differ: " + std::to_string(p.k) + " and " + std::to_string(kb));
    const Tensor* c = ctx.has(2) ? &dense_input(ctx, 2, held[2]) : nullptr;
    Tensor y = ctx.alloc(DType::f32, {p.m, p.n});
    k::gemm(p, f32_ptr(ctx, a, "A"), f32_ptr(ctx, b, "B"), c ? f32_ptr(ctx, *c, "C") : nullptr,
            c ? std::span<const int64_t>(c->shape()) : std::span<const int64_t>(),
            y.mutable_data<float>(), act_);
    ctx.outputs[0] = std::move(y);
  }

 private:
  k::GemmParams p_;
  k::Activation act_;
};

void batch_norm_op(OpContext& ctx, float eps) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 2) ctx.fail("input must have rank >= 2");
  const int64_t c = x.dim(1);
  Tensor params[4];
  for (int i = 0; i < 4; ++i) {
    params[i] = ctx.in(static_cast<size_t>(i + 1)).contiguous();
    if (params[i].numel() != c)
      ctx.fail("scale, B, mean and var must have " + std::to_string(c) + " elements");
  }
  const int64_t spatial = c == 0 ? 0 : x.numel() / x.dim(0) / c;
  Tensor y = ctx.alloc(DType::f32, x.shape());
  k::batch_norm(x.dim(0), c, spatial, f32_ptr(ctx, x, "input"), f32_ptr(ctx, params[0], "scale"),
                f32_ptr(ctx, params[1], "B"), f32_ptr(ctx, params[2], "mean"),
                f32_ptr(ctx, params[3], "var"), eps, y.mutable_data<float>());
  ctx.outputs[0] = std::move(y);
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const KernelInit& init, bool is_max)
      : win_(Window::read(init)),
        is_max_(is_max),
        ceil_(init.node.attr_int("ceil_mode", 0) != 0),
        include_pad_(init.node.attr_int("count_include_pad", 0) != 0) {
    if (win_.kernel.size() != 2)
      init.fail("only 2-D pooling (kernel_shape of 2 values) is supported");
    if (init.node.outputs.size() > 1) init.fail("the Indices output of MaxPool is unsupported");
    if (!is_max && !win_.dilations.empty())
      for (int64_t d : win_.dilations)
        if (d != 1) init.fail("AveragePool with dilations is unsupported");
    if (init.node.attr_int("storage_order", 0) != 0) init.fail("storage_order 1 is unsupported");
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    if (x.rank() != 4) ctx.fail("input must be NCHW (rank 4)");
    std::vector<int64_t> st, dil, pb, pe;
    win_.resolve(ctx, {x.dim(2), x.dim(3)}, win_.kernel, st, dil, pb, pe);
    k::Pool2dParams p;
    p.n = x.dim(0), p.c = x.dim(1), p.h = x.dim(2), p.w = x.dim(3);
    p.kh = win_.kernel[0], p.kw = win_.kernel[1];
    p.stride_h = st[0], p.stride_w = st[1], p.dil_h = dil[0], p.dil_w = dil[1];
    p.pad_top = pb[0], p.pad_left = pb[1], p.pad_bottom = pe[0], p.pad_right = pe[1];
    p.ceil_mode = ceil_;
    p.count_include_pad = include_pad_;
    k::validate(p);
    Tensor y = ctx.alloc(DType::f32, {p.n, p.c, p.out_h(), p.out_w()});
    if (is_max_)
      k::max_pool2d(p, f32_ptr(ctx, x, "input"), y.mutable_data<float>());
    else
      k::average_pool2d(p, f32_ptr(ctx, x, "input"), y.mutable_data<float>());
    ctx.outputs[0] = std::move(y);
  }

 private:
  Window win_;
  bool is_max_, ceil_, include_pad_;
};

void global_average_pool_op(OpContext& ctx) {
  const Tensor x = ctx.in(0).contiguous();
  if (x.rank() < 3) ctx.fail("input must have rank >= 3");
  Shape shape = x.shape();
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.size(); ++d) spatial *= shape[d], shape[d] = 1;
  Tensor y = ctx.alloc(DType::f32, shape);
  k::global_average_pool(x.dim(0) * x.dim(1), spatial, f32_ptr(ctx, x, "input"),
                         y.mutable_data<float>());
  ctx.outputs[0] = std::move(y);
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const KernelInit& init, bool upsample) : upsample_(upsample) {
    const std::string mode = init.node.attr_string("mode", "nearest");
    if (mode == "nearest")
      mode_ = k::ResizeMode::nearest;
    else if (mode == "linear" || mode == "bilinear")
      mode_ = k::ResizeMode::linear;
    else
      init.fail("mode '" + mode + "' is unsupported (nearest, linear)");
    // Opset 10 Resize and Upsample use asymmetric coordinates; 11+ default half_pixel.
    const bool asym = upsample || init.opset < 11;
    const std::string ct =
        init.node.attr_string("coordinate_transformation_mode", asym ? "asymmetric" : "half_pixel");
    if (ct == "half_pixel")
      transform_ = k::CoordinateTransform::half_pixel;
    else if (ct == "pytorch_half_pixel")
      transform_ = k::CoordinateTransform::pytorch_half_pixel;
    else if (ct == "align_corners")
      transform_ = k::CoordinateTransform::align_corners;
    else if (ct == "asymmetric")
      transform_ = k::CoordinateTransform::asymmetric;
    else if (ct == "tf_half_pixel_for_nearest")
      transform_ = k::CoordinateTransform::tf_half_pixel_for_nearest;
    else
      init.fail("coordinate_transformation_mode '" + ct + "' is unsupported");
    const std::string nm = init.node.attr_string(
        "nearest_mode", asym && init.opset < 11 ? "floor" : "round_prefer_floor");
    if (nm == "round_prefer_floor")
      nearest_ = k::NearestMode::round_prefer_floor;
    else if (nm == "round_prefer_ceil")
      nearest_ = k::NearestMode::round_prefer_ceil;
    else if (nm == "floor")
      nearest_ = k::NearestMode::floor;
    else if (nm == "ceil")
      nearest_ = k::NearestMode::ceil;
    else
      init.fail("nearest_mode '" + nm + "' is unsupported");
    if (init.node.attr_int("antialias", 0) != 0) init.fail("antialias is unsupported");
    if (init.node.attr_int("exclude_outside", 0) != 0) init.fail("exclude_outside is unsupported");
    if (upsample && init.opset < 9)
      init.fail("Upsample before opset 9 (scales attribute) is unsupported");
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    if (x.rank() != 4) ctx.fail("input must be NCHW (rank 4)");
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    const bool opset10 = upsample_ || ctx.opset < 11;
    const size_t scales_at = opset10 ? 1 : 2;
    if (ctx.has(scales_at) && ctx.in(scales_at).numel() > 0)
      scales = ctx.in(scales_at).to_f32_vector();
    if (!opset10 && ctx.has(3) && ctx.in(3).numel() > 0)
      sizes = int_values(ctx, ctx.in(3), "sizes");
    k::ResizeParams p;
    p.n = x.dim(0), p.c = x.dim(1), p.in_h = x.dim(2), p.in_w = x.dim(3);
    if (!sizes.empty()) {
      if (sizes.size() != 4 || sizes[0] != p.n || sizes[1] != p.c)
        ctx.fail("sizes must be [N, C, H, W] of the input's N and C");
      p.out_h = sizes[2], p.out_w = sizes[3];
    } else if (scales.size() == 4) {
      if (scales[0] != 1.0f || scales[1] != 1.0f) ctx.fail("scaling N or C is unsupported");
      p.scale_h = scales[2], p.scale_w = scales[3];
      // A NaN, infinite or 2^63-sized product has no int64 (the cast would be undefined).
      for (const float sc : {p.scale_h, p.scale_w})
        if (!(std::abs(sc) * static_cast<float>(std::max(p.in_h, p.in_w)) < 0x1p62f))
          ctx.fail("scale " + std::to_string(sc) + " gives no finite output size");
      p.out_h = static_cast<int64_t>(std::floor(static_cast<float>(p.in_h) * p.scale_h));
      p.out_w = static_cast<int64_t>(std::floor(static_cast<float>(p.in_w) * p.scale_w));
    } else {
      ctx.fail("needs 4 scales or 4 sizes");
    }
    p.mode = mode_, p.transform = transform_, p.nearest = nearest_;
    k::validate(p);
    Tensor y = ctx.alloc(DType::f32, {p.n, p.c, p.out_h, p.out_w});
    k::resize2d(p, f32_ptr(ctx, x, "input"), y.mutable_data<float>());
    ctx.outputs[0] = std::move(y);
  }

 private:
  bool upsample_;
  k::ResizeMode mode_ = k::ResizeMode::nearest;
  k::CoordinateTransform transform_ = k::CoordinateTransform::half_pixel;
  k::NearestMode nearest_ = k::NearestMode::round_prefer_floor;
};

class LstmKernel final : public Kernel {
 public:
  explicit LstmKernel(const KernelInit& init) : hidden_(init.node.attr_int("hidden_size", 0)) {
    const std::string dir = init.node.attr_string("direction", "forward");
    if (dir == "forward")
      dir_ = k::LstmDirection::forward;
    else if (dir == "reverse")
      dir_ = k::LstmDirection::reverse;
    else if (dir == "bidirectional")
      dir_ = k::LstmDirection::bidirectional;
    else
      init.fail("direction '" + dir + "' is invalid");
    if (hidden_ <= 0) init.fail("hidden_size must be positive");
    if (init.node.attr_int("layout", 0) != 0) init.fail("layout 1 is unsupported");
    if (init.node.attr_int("input_forget", 0) != 0) init.fail("input_forget is unsupported");
    if (init.node.find("clip")) init.fail("clip is unsupported");
    if (const auto* a = init.node.find("activations")) {
      const std::vector<std::string> def = {"Sigmoid", "Tanh", "Tanh"};
      for (size_t i = 0; i < a->strings.size(); ++i)
        if (a->strings[i] != def[i % 3])
          init.fail("activations other than Sigmoid, Tanh, Tanh are unsupported");
    }
    if (init.node.inputs.size() > 7 && !init.node.inputs[7].empty())
      init.fail("peepholes (input P) are unsupported");
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const Tensor w = ctx.in(1).contiguous();
    const Tensor r = ctx.in(2).contiguous();
    if (x.rank() != 3) ctx.fail("X must be [seq_len, batch, input_size]");
    k::LstmParams p;
    p.seq_len = x.dim(0), p.batch = x.dim(1), p.input_size = x.dim(2), p.hidden_size = hidden_;
    p.direction = dir_;
    const int64_t d = p.num_directions(), h = hidden_;
    if (w.shape() != Shape{d, 4 * h, p.input_size})
      ctx.fail("W must be " + shape_to_string({d, 4 * h, p.input_size}));
    if (r.shape() != Shape{d, 4 * h, h}) ctx.fail("R must be " + shape_to_string({d, 4 * h, h}));
    Tensor b = ctx.has(3) ? ctx.in(3).contiguous() : Tensor();
    if (b.defined() && b.shape() != Shape{d, 8 * h})
      ctx.fail("B must be " + shape_to_string({d, 8 * h}));
    if (ctx.has(4)) {
      const std::vector<int64_t> lens =
          int_values(ctx, ctx.in(4).contiguous().reshape({ctx.in(4).numel()}), "sequence_lens");
      for (int64_t l : lens)
        if (l != p.seq_len) ctx.fail("sequence_lens shorter than the sequence are unsupported");
    }
    const Shape state{d, p.batch, h};
    Tensor h0 = ctx.has(5) ? ctx.in(5).contiguous() : Tensor();
    Tensor c0 = ctx.has(6) ? ctx.in(6).contiguous() : Tensor();
    if (h0.defined() && h0.shape() != state)
      ctx.fail("initial_h must be " + shape_to_string(state));
    if (c0.defined() && c0.shape() != state)
      ctx.fail("initial_c must be " + shape_to_string(state));
    const size_t nout = ctx.outputs.size();
    Tensor y = ctx.alloc(DType::f32, {p.seq_len, d, p.batch, h});
    Tensor yh = ctx.alloc(DType::f32, state);
    Tensor yc = ctx.alloc(DType::f32, state);
    Tensor scratch = ctx.alloc(DType::f32, {k::lstm_scratch_size(p)});
    k::lstm(p, f32_ptr(ctx, x, "X"), f32_ptr(ctx, w, "W"), f32_ptr(ctx, r, "R"),
            b.defined() ? f32_ptr(ctx, b, "B") : nullptr,
            h0.defined() ? f32_ptr(ctx, h0, "initial_h") : nullptr,
            c0.defined() ? f32_ptr(ctx, c0, "initial_c") : nullptr, y.mutable_data<float>(),
            yh.mutable_data<float>(), yc.mutable_data<float>(), scratch.mutable_data<float>());
    if (nout > 0) ctx.outputs[0] = std::move(y);
    if (nout > 1) ctx.outputs[1] = std::move(yh);
    if (nout > 2) ctx.outputs[2] = std::move(yc);
  }

 private:
  int64_t hidden_;
  k::LstmDirection dir_ = k::LstmDirection::forward;
};

}  // namespace

void register_nn_ops() {
  register_op("", "Conv",
              [](const KernelInit& init) { return std::make_unique<ConvKernel>(init); });
  register_op("ai.tailor", "FusedConv",
              [](const KernelInit& init) { return std::make_unique<ConvKernel>(init); });
  register_op("", "ConvTranspose",
              [](const KernelInit& init) { return std::make_unique<ConvTransposeKernel>(init); });
  register_op("ai.tailor", "FusedConvTranspose",
              [](const KernelInit& init) { return std::make_unique<ConvTransposeKernel>(init); });
  register_op("", "MatMul", [](const KernelInit&) { return make_kernel(matmul_op); });
  register_op("", "Gemm",
              [](const KernelInit& init) { return std::make_unique<GemmKernel>(init); });
  // FusedGemm's activation parameters are apart from Gemm's alpha and beta.
  register_op("ai.tailor", "FusedGemm", [](const KernelInit& init) {
    return std::make_unique<GemmKernel>(
        init, activation_from_node(init.node, "activation_alpha", "activation_beta"));
  });
  register_op("", "BatchNormalization", [](const KernelInit& init) {
    const float eps = init.node.attr_float("epsilon", 1e-5f);
    if (init.node.attr_int("training_mode", 0) != 0) init.fail("training_mode is unsupported");
    return make_kernel([eps](OpContext& ctx) { batch_norm_op(ctx, eps); });
  });
  register_op("", "MaxPool",
              [](const KernelInit& init) { return std::make_unique<PoolKernel>(init, true); });
  register_op("", "AveragePool",
              [](const KernelInit& init) { return std::make_unique<PoolKernel>(init, false); });
  register_op("", "GlobalAveragePool",
              [](const KernelInit&) { return make_kernel(global_average_pool_op); });
  register_op("", "Resize",
              [](const KernelInit& init) { return std::make_unique<ResizeKernel>(init, false); });
  register_op("", "Upsample",
              [](const KernelInit& init) { return std::make_unique<ResizeKernel>(init, true); });
  register_op("", "LSTM",
              [](const KernelInit& init) { return std::make_unique<LstmKernel>(init); });
}

}  // namespace tailor::runtime
