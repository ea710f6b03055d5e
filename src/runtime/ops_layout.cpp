// ai.tailor.ConvNhwc: 2-D convolution on channels-last tensors, emitted by the
// layout pass (src/graph/passes/layout.cpp). X [n, h, w, c_in], W [c_out, kh,
// kw, c_in/group] (OHWI), B [c_out], Y [n, out_h, out_w, c_out], with the
// FusedConv activation epilogue. Paths: 1×1 stride-1 unpadded convs are one
// gemm over all pixels (no im2col); depthwise convs run a direct loop whose
// inner loop runs over contiguous channels (vectorised by the compiler);
// other group-1 convs gather NHWC patches (im2col, rows = output pixels) and
// run one gemm (the registry's gemm kernel). Other groupings are refused at
// load time.
#include <algorithm>
#include <cstring>

#include "op_util.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/fused.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

namespace k = kernels;

class ConvNhwcKernel final : public Kernel {
 public:
  explicit ConvNhwcKernel(const KernelInit& init)
      : act_(activation_from_node(init.node)),
        strides_(init.node.attr_ints("strides", {1, 1})),
        pads_(init.node.attr_ints("pads", {0, 0, 0, 0})),
        dil_(init.node.attr_ints("dilations", {1, 1})),
        group_(init.node.attr_int("group", 1)) {
    if (init.node.attr_string("auto_pad", "NOTSET") != "NOTSET")
      init.fail("auto_pad is unsupported (the layout pass writes explicit pads)");
    if (strides_.size() != 2 || pads_.size() != 4 || dil_.size() != 2)
      init.fail("needs 2-D strides, pads, dilations");
  }

  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const Tensor w = ctx.in(1).contiguous();
    const Tensor b = ctx.has(2) ? ctx.in(2).contiguous() : Tensor();
    if (x.rank() != 4 || w.rank() != 4) ctx.fail("input and weight must be rank 4 (NHWC, OHWI)");
    if (x.dtype() != DType::f32 || w.dtype() != DType::f32)
      ctx.fail("input and weight must be f32");
    k::Conv2dParams p;
    p.n = x.dim(0), p.h = x.dim(1), p.w = x.dim(2), p.c_in = x.dim(3);
    p.c_out = w.dim(0), p.kh = w.dim(1), p.kw = w.dim(2), p.groups = group_;
    p.stride_h = strides_[0], p.stride_w = strides_[1], p.dil_h = dil_[0], p.dil_w = dil_[1];
    p.pad_top = pads_[0], p.pad_left = pads_[1], p.pad_bottom = pads_[2], p.pad_right = pads_[3];
    if (w.dim(3) * group_ != p.c_in) ctx.fail("input channels differ from weight channels x group");
    k::validate(p);
    const bool depthwise = group_ == p.c_in && group_ == p.c_out;
    if (group_ != 1 && !depthwise)
      ctx.fail("only group 1 and depthwise convolutions are supported in NHWC");
    if (b.defined() && (b.numel() != p.c_out || b.dtype() != DType::f32))
      ctx.fail("bias must be f32 [c_out]");
    const int64_t oh = p.out_h(), ow = p.out_w();
    Tensor y = ctx.alloc(DType::f32, {p.n, oh, ow, p.c_out});
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    const float* pb = b.defined() ? b.data<float>() : nullptr;
    float* py = y.mutable_data<float>();
    const int64_t pixels = p.n * oh * ow;
    if (depthwise) {
      depthwise_nhwc(p, px, pw, pb, py);
    } else {
      const int64_t kk = p.kh * p.kw * p.c_in;
      const bool pointwise = p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                             p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 &&
                             p.pad_right == 0;
      if (pointwise) {
        k::active_kernels().gemm(false, true, pixels, p.c_out, kk, 1.f, px, kk, pw, kk, 0.f, py,
                                 p.c_out);
      } else {
        Tensor cols = ctx.alloc(DType::f32, {pixels, kk});
        im2col_nhwc(p, px, cols.mutable_data<float>());
        k::active_kernels().gemm(false, true, pixels, p.c_out, kk, 1.f, cols.data<float>(), kk, pw,
                                 kk, 0.f, py, p.c_out);
      }
    }
    epilogue(pb, p.c_out, pixels, py);
    ctx.outputs[0] = std::move(y);
  }

 private:
  /// Rows of [kh, kw, c_in] patches, one per output pixel (zeros in the padding).
  static void im2col_nhwc(const k::Conv2dParams& p, const float* x, float* cols) {
    const int64_t oh = p.out_h(), ow = p.out_w(), kk = p.kh * p.kw * p.c_in;
    linalg::parallel_for(p.n * oh, k::detail::worth_threads_elements(p.n * oh * ow * kk),
                         [&](int64_t r) {
                           const int64_t b = r / oh, oy = r % oh;
                           for (int64_t ox = 0; ox < ow; ++ox) {
                             float* row = cols + (r * ow + ox) * kk;
                             for (int64_t ky = 0; ky < p.kh; ++ky) {
                               const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                               for (int64_t kx = 0; kx < p.kw; ++kx) {
                                 const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                                 float* dst = row + (ky * p.kw + kx) * p.c_in;
                                 if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w)
                                   std::fill(dst, dst + p.c_in, 0.f);
                                 else
                                   std::memcpy(dst, x + ((b * p.h + iy) * p.w + ix) * p.c_in,
                                               static_cast<size_t>(p.c_in) * 4);
                               }
                             }
                           }
                         });
  }

  /// Depthwise: W [c, kh, kw, 1] regrouped as [kh, kw, c] so the inner loop
  /// runs over contiguous channels of input, weight and output.
  static void depthwise_nhwc(const k::Conv2dParams& p, const float* x, const float* w,
                             const float* bias, float* y) {
    const int64_t c = p.c_in, oh = p.out_h(), ow = p.out_w();
    std::vector<float> wt(static_cast<size_t>(p.kh * p.kw * c));
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t t = 0; t < p.kh * p.kw; ++t)
        wt[static_cast<size_t>(t * c + ch)] = w[ch * p.kh * p.kw + t];
    (void)bias;
    linalg::parallel_for(p.n * oh, k::detail::worth_threads(p.n * oh * ow * c * p.kh * p.kw),
                         [&](int64_t r) {
                           const int64_t b = r / oh, oy = r % oh;
                           for (int64_t ox = 0; ox < ow; ++ox) {
                             float* out = y + (r * ow + ox) * c;
                             std::fill(out, out + c, 0.f);
                             for (int64_t ky = 0; ky < p.kh; ++ky) {
                               const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                               if (iy < 0 || iy >= p.h) continue;
                               for (int64_t kx = 0; kx < p.kw; ++kx) {
                                 const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                                 if (ix < 0 || ix >= p.w) continue;
                                 const float* in = x + ((b * p.h + iy) * p.w + ix) * c;
                                 const float* wk = wt.data() + (ky * p.kw + kx) * c;
                                 for (int64_t ch = 0; ch < c; ++ch) out[ch] += in[ch] * wk[ch];
                               }
                             }
                           }
                         });
  }

  /// y[pixel, c] = act(y[pixel, c] + bias[c]).
  void epilogue(const float* bias, int64_t c_out, int64_t pixels, float* y) const {
    linalg::parallel_for(pixels, k::detail::worth_threads_elements(pixels * c_out), [&](int64_t r) {
      float* row = y + r * c_out;
      if (bias)
        for (int64_t c = 0; c < c_out; ++c) row[c] += bias[c];
      if (act_.kind != k::ActivationKind::none) k::apply_activation(act_, row, row, c_out);
    });
  }

  k::Activation act_;
  std::vector<int64_t> strides_, pads_, dil_;
  int64_t group_;
};

}  // namespace

void register_layout_ops() {
  register_op("ai.tailor", "ConvNhwc",
              [](const KernelInit& init) { return std::make_unique<ConvNhwcKernel>(init); });
}

}  // namespace tailor::runtime
