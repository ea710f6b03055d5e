// Compressed-weight ops (domain ai.tailor): a layer whose weight is held in a
// compression scheme's stored form (schemes::Encoded) and multiplied by it
// through the scheme's own matmul, never forming the dense weight.
//
//   CompressedLinear(X [..., in], B [out]?) -> Y [..., out]:  Y = X·Ŵᵀ + B
//     (int8-a8 from 16 rows of X on: the rows as the pixels of the W8A8 1×1
//     conv kernel, X and Y transposed around it; the same bits as its GEMM)
//   CompressedConv(X [N, C, H, W], B [out]?) -> Y [N, out, OH, OW]: Conv (ONNX
//     semantics, group 1) with Ŵ viewed [out, C·kh·kw] (DESIGN.md's conv
//     orientation): im2row of X into [N·OH·OW, C·kh·kw] in blocks of rows
//     (≈ 1 MiB), the scheme's matmul per block, laid out NCHW, the bias added.
//     A weight held as packed codes (int8, int4, int3, ternary and their
//     grouped / data-aware forms: schemes::packed_view) skips both: the
//     runtime's qb_conv kernel reads the NCHW image through its
//     implicit-im2col gather, the bias in its epilogue; a 1×1 stride-1
//     unpadded conv decodes Ŵ per call and runs the dense Conv's
//     kernels::conv2d on it (the dense op's bits on Ŵ; the AVX-512 conv1x1
//     kernel). An
//     int8-a8 weight (W8A8: each row of the im2row matrix quantized to int8,
//     schemes::kernels::q8_q8_gemm_ref) of a 1×1 stride-1 unpadded conv runs
//     the q8q8_conv1x1 kernel on the image in place (a row is a pixel's
//     column of channels), its codes packed once at load; of any other conv
//     (k×k, strided, padded) it runs the q8q8_conv kernel, each image
//     rounded with one scale (kernels::Q8Q8ConvParams, the file's form
//     graph::emit_w8a8). Packed codes of a
//     3×3 stride-1 conv where the dense Conv would take Winograd F(4×4, 3×3)
//     (kernels::conv_default_algorithm) run that kernel instead, since the
//     direct product on the codes does 4× its multiplies (the detector's
//     96→24 3×3 heads: 3× slower than the dense model's Winograd): per call,
//     Ŵ decoded and transformed into the Winograd-domain weights (36·⌈out/6⌉
//     ·6·C floats, 4× the dense weight) in one scratch block of the run's
//     arena, dropped after the call; the op holds only the codes. (Held from
//     load, the detector's five heads kept 1.66 MB; made per call, their
//     times, 1.3–4.8 ms each at 1 thread, measured within noise of that.)
// Attribute `weight` (kind encoded) holds the factors; CompressedConv also
// takes kernel_shape (required), strides, pads, dilations, and the fused
// activation attributes of FusedConv (`activation`, `alpha`, `beta`; the
// fusion pass sets them, graph/fused_ops.h), applied after the bias. Both ops
// take `kernel_variant` ("auto", or "w8a8": a per-channel int8 weight-only
// weight multiplied as int8-a8 multiplies its codes, activations rounded to
// int8; the tuner's decision for compressed layers, see w8a8_codes).
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "op_util.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/fused.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/runtime/op.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/scheme.h"

namespace tailor::runtime {
namespace {

std::shared_ptr<const schemes::Encoded> weight_of(const KernelInit& init) {
  const graph::Attribute* a = init.node.find("weight");
  if (!a || a->kind != graph::Attribute::Kind::encoded || !a->encoded)
    init.fail(
        "needs attribute 'weight' holding a compressed weight (schemes::Encoded); a file "
        "supplies one as a standard form (graph::recognise_compressed_weights)");
  return a->encoded;
}

// The int8 codes a W8A8 kernel multiplies, or nullopt for the weight-only
// kernels: an int8-a8 weight's, and, where node attribute `kernel_variant` is
// "w8a8" (a tuner decision, tune/space.h), a weight-only int8 weight's. Both
// are per-channel int8 codes with f16 scales, the same ones for one dense
// weight (schemes::detail::quantize_symmetric), so the variant runs the
// int8-a8 weight's kernels and bits. Attribute values: "auto" (the default:
// the weight's own kernel) and "w8a8". Throws (naming the node) for another
// value, or for "w8a8" on a weight other than per-channel int8 codes.
std::optional<schemes::PackedView> w8a8_codes(const KernelInit& init, const schemes::Encoded& w) {
  const std::string variant = init.node.attr_string("kernel_variant", "auto");
  if (variant != "auto" && variant != "w8a8")
    init.fail("kernel_variant must be auto or w8a8, got '" + variant + "'");
  if (auto a8 = schemes::w8a8_view(w)) return a8;
  if (variant == "auto") return std::nullopt;
  auto p = schemes::int8_weight_only_view(w);
  if (!p)
    init.fail("kernel_variant w8a8 needs per-channel int8 codes, not a " + w.label() + " weight");
  return p;
}

void add_bias(OpContext& ctx, float* y, int64_t rows, int64_t out, int64_t inner) {
  if (!ctx.has(1)) return;
  const Tensor b = ctx.in(1).contiguous();
  if (b.dtype() != DType::f32 || b.numel() != out)
    ctx.fail("bias must be f32 [" + std::to_string(out) + "]");
  const float* pb = b.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      float* p = y + (r * out + o) * inner;
      for (int64_t i = 0; i < inner; ++i) p[i] += pb[o];
    }
}

class CompressedLinear final : public Kernel {
 public:
  explicit CompressedLinear(const KernelInit& init) : w_(weight_of(init)) {
    a8_ = w8a8_codes(init, *w_);
    if (a8_ && w_->in() <= kernels::kQ8Q8Conv1x1MaxIn) {
      const kernels::KernelTable& t = kernels::active_kernels();
      a8_packed_.resize(static_cast<size_t>(t.q8q8_conv1x1_pack(a8_->args, nullptr)));
      t.q8q8_conv1x1_pack(a8_->args, a8_packed_.data());
    }
  }
  void run(OpContext& ctx) override {
    const Tensor& in = ctx.in(0);
    Tensor copy;  // only for a strided input: no Tensor is made per token otherwise
    if (!in.is_contiguous()) copy = in.contiguous();
    const Tensor& x = copy.defined() ? copy : in;
    if (x.dtype() != DType::f32 || x.rank() < 1 || x.shape().back() != w_->in())
      ctx.fail("input must be f32 [..., " + std::to_string(w_->in()) + "], got " +
               shape_to_string(x.shape()));
    const int64_t batch = x.numel() / w_->in();
    // The output's shape, its storage kept between this thread's runs (not
    // the kernel's: CutRuns run one kernel on several threads at once).
    thread_local Shape shape;
    shape.assign(x.shape().begin(), x.shape().end());
    shape.back() = w_->out();
    Tensor y = ctx.alloc(DType::f32, shape);  // written whole by the scheme's kernel
    if (!a8_packed_.empty() && batch >= kA8MinRows) {
      w8a8_rows(x.data<float>(), batch, y.mutable_data<float>());
    } else if (a8_) {
      // The scheme's W8A8 GEMM, which int8-a8's matmul runs.
      schemes::kernels::PackedGemmArgs a = a8_->args;
      a.x = x.data<float>(), a.batch = batch, a.y = y.mutable_data<float>();
      schemes::kernels::best_gemm_kernels().q8q8(a);
    } else {
      schemes::matmul_into(*w_, x.data<float>(), batch, y.mutable_data<float>());
    }
    add_bias(ctx, y.mutable_data<float>(), batch, w_->out(), 1);
    ctx.outputs[0] = std::move(y);
  }

 private:
  // int8-a8 from this many rows of X on: the rows (quantized per row, as
  // the scheme's GEMM does) as the pixels of the W8A8 1×1 conv kernel, whose
  // 16-pixel tiles a few rows would leave mostly empty. Same bits either way.
  static constexpr int64_t kA8MinRows = 16;

  // Y [rows, out] = the W8A8 product: X transposed to [in, rows], the conv
  // kernel's [out, rows], transposed back.
  void w8a8_rows(const float* x, int64_t rows, float* y) const {
    const int64_t in = w_->in(), out = w_->out();
    // Per thread: runs of one plan may share this kernel across threads.
    thread_local std::vector<float> xt, yt;
    xt.resize(static_cast<size_t>(in * rows));
    yt.resize(static_cast<size_t>(out * rows));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < in; ++k) xt[k * rows + r] = x[r * in + k];
    kernels::Q8Q8Conv1x1Params p;
    p.n = 1, p.c_in = in, p.c_out = out, p.pixels = rows, p.packed = a8_packed_.data();
    kernels::active_kernels().q8q8_conv1x1(p, xt.data(), nullptr, yt.data(), {});
    for (int64_t o = 0; o < out; ++o)
      for (int64_t r = 0; r < rows; ++r) y[r * out + o] = yt[o * rows + r];
  }

  std::shared_ptr<const schemes::Encoded> w_;
  std::optional<schemes::PackedView> a8_;  // W8A8: the int8 codes (w8a8_codes)
  std::vector<uint8_t> a8_packed_;         // the codes as q8q8_conv1x1 reads them
};

class CompressedConv final : public Kernel {
 public:
  explicit CompressedConv(const KernelInit& init)
      : w_(weight_of(init)), act_(activation_from_node(init.node)) {
    const graph::Node& n = init.node;
    kernel_ = n.attr_ints("kernel_shape", {});
    strides_ = n.attr_ints("strides", {1, 1});
    dil_ = n.attr_ints("dilations", {1, 1});
    pads_ = n.attr_ints("pads", {0, 0, 0, 0});
    if (kernel_.size() != 2 || strides_.size() != 2 || dil_.size() != 2 || pads_.size() != 4)
      init.fail("needs 2-D kernel_shape, strides, dilations and 4 pads");
    if (n.attr_int("group", 1) != 1) init.fail("group must be 1");
    if (n.attr_string("auto_pad", "NOTSET") != "NOTSET")
      init.fail("auto_pad is unsupported; give pads");
    for (int64_t v : strides_)
      if (v < 1) init.fail("strides must be positive");
    for (int64_t v : dil_)
      if (v < 1) init.fail("dilations must be positive");
    if (w_->in() % (kernel_[0] * kernel_[1]) != 0)
      init.fail("weight's in is not a multiple of kh·kw");
    for (int64_t v : pads_)
      if (v < 0) init.fail("pads must be non-negative");
    const auto a8 = w8a8_codes(init, *w_);
    if (!a8) packed_ = schemes::packed_view(*w_);
    const bool pointwise =
        kernel_[0] == 1 && kernel_[1] == 1 && strides_[0] == 1 && strides_[1] == 1 &&
        std::all_of(pads_.begin(), pads_.end(), [](int64_t v) { return v == 0; });
    pointwise_ = pointwise && packed_.has_value();
    if (packed_) {
      const kernels::Conv2dParams cp = conv_params(1, w_->in() / (kernel_[0] * kernel_[1]), 1, 1);
      if (kernels::conv_winograd_eligible(cp))
        winograd_floats_ = kernels::f32_conv_winograd_f43_pack(cp, nullptr, nullptr);
    }
    if (a8) {
      if (w_->in() > kernels::kQ8Q8Conv1x1MaxIn)
        init.fail("W8A8 weight of " + std::to_string(w_->in()) + " inputs (channels × " +
                  "taps): the W8A8 kernels sum in int32 and take at most " +
                  std::to_string(kernels::kQ8Q8Conv1x1MaxIn));
      const kernels::KernelTable& t = kernels::active_kernels();
      a8_pointwise_ = pointwise;
      if (pointwise) {
        a8_packed_.resize(static_cast<size_t>(t.q8q8_conv1x1_pack(a8->args, nullptr)));
        t.q8q8_conv1x1_pack(a8->args, a8_packed_.data());
      } else {
        a8_packed_.resize(
            static_cast<size_t>(t.q8q8_conv_pack(a8->args, kernel_[0], kernel_[1], nullptr)));
        t.q8q8_conv_pack(a8->args, kernel_[0], kernel_[1], a8_packed_.data());
      }
    }
  }
  void run(OpContext& ctx) override {
    const Tensor x = ctx.in(0).contiguous();
    const int64_t kh = kernel_[0], kw = kernel_[1];
    if (x.dtype() != DType::f32 || x.rank() != 4 || x.dim(1) * kh * kw != w_->in())
      ctx.fail("input must be f32 [N, " + std::to_string(w_->in() / (kh * kw)) + ", H, W], got " +
               shape_to_string(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t oh = (h + pads_[0] + pads_[2] - dil_[0] * (kh - 1) - 1) / strides_[0] + 1;
    const int64_t ow = (w + pads_[1] + pads_[3] - dil_[1] * (kw - 1) - 1) / strides_[1] + 1;
    if (oh < 1 || ow < 1) ctx.fail("output would be empty");
    const int64_t k = c * kh * kw, pix = oh * ow, total = n * pix, out = w_->out();
    Tensor y = ctx.alloc(DType::f32, {n, out, oh, ow});
    float* d = y.mutable_data<float>();
    const float* px = x.data<float>();
    if (packed_ || !a8_packed_.empty()) {
      Tensor b;
      if (ctx.has(1)) {
        b = ctx.in(1).contiguous();
        if (b.dtype() != DType::f32 || b.numel() != out)
          ctx.fail("bias must be f32 [" + std::to_string(out) + "]");
      }
      if (!a8_packed_.empty() && !a8_pointwise_) {
        kernels::Q8Q8ConvParams p;
        p.conv = conv_params(n, c, h, w);
        p.packed = a8_packed_.data();
        kernels::active_kernels().q8q8_conv(p, px, b.defined() ? b.data<float>() : nullptr, d,
                                            act_);
        ctx.outputs[0] = std::move(y);
        return;
      }
      if (!a8_packed_.empty()) {
        kernels::Q8Q8Conv1x1Params p;
        p.n = n, p.c_in = c, p.c_out = out, p.pixels = h * w, p.packed = a8_packed_.data();
        kernels::active_kernels().q8q8_conv1x1(p, px, b.defined() ? b.data<float>() : nullptr, d,
                                               act_);
        ctx.outputs[0] = std::move(y);
        return;
      }
      kernels::QbConvParams p;
      p.w = packed_->args;
      p.bits = packed_->bits;
      p.conv = conv_params(n, c, h, w);
      const float* pb = b.defined() ? b.data<float>() : nullptr;
      if (pointwise_) {
        // 1×1 stride 1 unpadded: Ŵ decoded for this call and run as the dense
        // Conv runs its weight (kernels::conv2d: the table's conv1x1 kernel,
        // 12×32 on AVX-512, where its rule takes it; qb_conv's 6×16 AVX2
        // tile ran the detector's int8 1×1 convs at half the dense speed):
        // the dense Conv's bits on Ŵ. They equal qb_conv's on the op test's
        // shapes, not on every conv of the detector's and recogniser's
        // files, whose outputs moved by rounding (≤ 3.4e-5).
        Tensor scratch = ctx.alloc(DType::f32, {out * w_->in()});
        float* dense = scratch.mutable_data<float>();
        schemes::kernels::best_gemm_kernels().decode(packed_->bits)(packed_->args, 0, out, dense);
        kernels::conv2d(p.conv, px, dense, pb, d, act_, nullptr, nullptr);
      } else if (winograd_floats_ > 0 &&
                 kernels::conv_default_algorithm(p.conv) == kernels::ConvAlgorithm::winograd) {
        // Scratch: the Winograd weights, then Ŵ [out, C·3·3] (the [out, C, 3,
        // 3] kernel the packing reads), each written whole before it is read.
        Tensor scratch = ctx.alloc(DType::f32, {winograd_floats_ + out * w_->in()});
        float* u = scratch.mutable_data<float>();
        float* dense = u + winograd_floats_;
        schemes::kernels::best_gemm_kernels().decode(packed_->bits)(packed_->args, 0, out, dense);
        kernels::f32_conv_winograd_f43_pack(p.conv, dense, u);
        kernels::active_kernels().conv_winograd(p.conv, px, u, pb, d, act_);
      } else
        kernels::active_kernels().qb_conv(p, px, pb, d, act_);
      ctx.outputs[0] = std::move(y);
      return;
    }
    // im2row in blocks of rows (≈ 1 MiB each), so the patch matrix never holds
    // the whole image: row (b, oy, ox) holds the patch in (c, ky, kx) order.
    const int64_t block = std::max<int64_t>(64, (int64_t{1} << 18) / k);
    const int64_t cap = std::min(block, total);
    // Scratch for one block of patches and its products, every element written
    // before it is read (no zeroing).
    const std::unique_ptr<float[]> scratch(new float[static_cast<size_t>(cap * (k + out))]);
    float* pr = scratch.get();
    float* s = pr + cap * k;
    for (int64_t r0 = 0; r0 < total; r0 += block) {
      const int64_t nr = std::min(block, total - r0);
      linalg::parallel_for(nr, nr * k >= (1 << 16), [&](int64_t i) {
        const int64_t r = r0 + i;
        const int64_t b = r / pix, oy = (r % pix) / ow, ox = r % ow;
        float* dst = pr + i * k;
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = oy * strides_[0] - pads_[0] + ky * dil_[0];
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = ox * strides_[1] - pads_[1] + kx * dil_[1];
              *dst++ = (iy >= 0 && iy < h && ix >= 0 && ix < w)
                           ? px[((b * c + ci) * h + iy) * w + ix]
                           : 0.0f;
            }
          }
      });
      schemes::matmul_into(*w_, pr, nr, s);  // [nr, out]
      for (int64_t i = 0; i < nr; ++i) {
        const int64_t r = r0 + i, b = r / pix, p = r % pix;
        for (int64_t o = 0; o < out; ++o) d[(b * out + o) * pix + p] = s[i * out + o];
      }
    }
    add_bias(ctx, d, n, out, pix);
    if (act_.kind != kernels::ActivationKind::none)
      kernels::apply_activation(act_, d, d, n * out * pix);
    ctx.outputs[0] = std::move(y);
  }

 private:
  // The conv's parameters for n images of c channels, h × w (out from the weight).
  kernels::Conv2dParams conv_params(int64_t n, int64_t c, int64_t h, int64_t w) const {
    kernels::Conv2dParams p;
    p.n = n, p.c_in = c, p.h = h, p.w = w, p.c_out = w_->out();
    p.kh = kernel_[0], p.kw = kernel_[1], p.stride_h = strides_[0], p.stride_w = strides_[1];
    p.pad_top = pads_[0], p.pad_left = pads_[1], p.pad_bottom = pads_[2], p.pad_right = pads_[3];
    p.dil_h = dil_[0], p.dil_w = dil_[1];
    return p;
  }

  std::shared_ptr<const schemes::Encoded> w_;
  std::vector<int64_t> kernel_, strides_, dil_, pads_;
  kernels::Activation act_;                    // the fused activation (none by default)
  std::optional<schemes::PackedView> packed_;  // the codes, for the qb_conv kernel
  // int8-a8: the codes as q8q8_conv1x1 (1×1 stride 1 unpadded) or q8q8_conv reads them
  std::vector<uint8_t> a8_packed_;
  bool a8_pointwise_ = false;
  bool pointwise_ = false;  // packed codes of a 1×1 stride-1 unpadded conv
  // Packed 3×3 codes that may run Winograd: f32_conv_winograd_f43_pack's
  // floats for Ŵ (made per call), else 0.
  int64_t winograd_floats_ = 0;
};

}  // namespace

void register_compressed_ops() {
  register_op("ai.tailor", "CompressedLinear",
              [](const KernelInit& init) { return std::make_unique<CompressedLinear>(init); });
  register_op("ai.tailor", "CompressedConv",
              [](const KernelInit& init) { return std::make_unique<CompressedConv>(init); });
}

}  // namespace tailor::runtime
