// qb_f32_conv_6x16_avx2 and qb_f32_conv_ref (the conv on packed codes) for
// every packed scheme (int8, int4, int4-g32, int4-g64, int3, ternary) on
// shapes that hit every tail: c_out not a multiple of the 6-row tile, pixel
// counts not multiples of 16 and shorter than one tile, K past one
// 256-chunk, more than one pixel block, batches, 1×1 in place and k×k
// through the gather (strides, asymmetric pads, dilation), bias or none,
// activations. Two checks: (1) the reference, activation none, against the
// ONNX Conv definition summed in double on the scheme's own decode() (an
// independent path to Ŵ), within (K + 1)·ε·Σ|terms|; (2) the AVX2 kernel
// against the reference within f32_conv_test's bound (FMA against separate
// rounding, the Cephes activations).
#include <cmath>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct Case {
  int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
};

const Case kCases[] = {
    // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw
    {1, 7, 5, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},     // 1×1: 2 full panels, a tail of 13
    {2, 12, 3, 3, 13, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},    // a plane under one tile, 2 images
    {1, 300, 5, 8, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},    // K over one 256-chunk
    {1, 64, 20, 35, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},  // several pixel blocks
    {1, 33, 4, 4, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},     // one channel, one whole panel
    {1, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // 3×3 padded
    {2, 6, 13, 17, 9, 3, 3, 2, 2, 1, 0, 2, 1, 1, 1},    // strided, asymmetric pads
    {1, 4, 12, 30, 8, 3, 5, 1, 2, 2, 1, 0, 2, 2, 1},    // dilated, 3×5
    {1, 40, 6, 20, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // K = 360: two chunks via the gather
    {1, 6, 9, 9, 4, 1, 1, 2, 2, 1, 1, 0, 0, 1, 1},      // 1×1 strided, padded: the gather
};

const char* const kSchemes[] = {"int8", "int4", "int4-g32", "int4-g64", "int3", "ternary"};

const Activation kActs[] = {Activation::none(), Activation::relu(), Activation::hard_swish(),
                            Activation::sigmoid()};

class QbConv : public KernelVsRef {
 protected:
  void check(const Case& c, const char* scheme, const Activation& act, bool with_bias,
             uint64_t seed) {
    QbConvParams p;
    Conv2dParams& q = p.conv;
    q.n = c.n, q.c_in = c.c_in, q.h = c.h, q.w = c.w, q.c_out = c.c_out, q.kh = c.kh, q.kw = c.kw;
    q.stride_h = c.sh, q.stride_w = c.sw, q.pad_top = c.pt, q.pad_left = c.pl;
    q.pad_bottom = c.pb, q.pad_right = c.pr, q.dil_h = c.dh, q.dil_w = c.dw;
    const int64_t k = c.c_in * c.kh * c.kw, oh = q.out_h(), ow = q.out_w();
    const std::string what =
        std::string(scheme) + " n" + std::to_string(c.n) + " c" + std::to_string(c.c_in) + "→" +
        std::to_string(c.c_out) + " " + std::to_string(c.h) + "×" + std::to_string(c.w) + " k" +
        std::to_string(c.kh) + "×" + std::to_string(c.kw) + " s" + std::to_string(c.sh) + " act " +
        std::to_string(static_cast<int>(act.kind)) + (with_bias ? " bias" : "");
    const auto wv = uniform(c.c_out * k, seed);
    const auto enc = schemes::parse_scheme(scheme).encode(Tensor::from_f32({c.c_out, k}, wv));
    const auto view = schemes::packed_view(*enc);
    ASSERT_TRUE(view.has_value()) << what;
    const Tensor dec = enc->decode().contiguous();
    const float* wd = dec.data<float>();
    p.w = view->args;
    p.bits = view->bits;
    const auto x = uniform(c.n * c.c_in * c.h * c.w, seed + 1);
    const auto bias = uniform(c.c_out, seed + 2);
    const float* bp = with_bias ? bias.data() : nullptr;
    const size_t ny = static_cast<size_t>(c.n * c.c_out * oh * ow);
    std::vector<float> want(ny), got(ny, -99.f), def(ny);
    std::vector<double> mag(ny), tol_def(ny), tol(ny);
    size_t i = 0;
    for (int64_t b = 0; b < c.n; ++b)
      for (int64_t o = 0; o < c.c_out; ++o)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox, ++i) {
            double s = with_bias ? bias[o] : 0.0, m = std::fabs(s);
            for (int64_t ci = 0; ci < c.c_in; ++ci)
              for (int64_t ky = 0; ky < c.kh; ++ky)
                for (int64_t kx = 0; kx < c.kw; ++kx) {
                  const int64_t iy = oy * c.sh - c.pt + ky * c.dh,
                                ix = ox * c.sw - c.pl + kx * c.dw;
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  const double term =
                      static_cast<double>(wd[o * k + (ci * c.kh + ky) * c.kw + kx]) *
                      x[static_cast<size_t>(((b * c.c_in + ci) * c.h + iy) * c.w + ix)];
                  s += term;
                  m += std::fabs(term);
                }
            def[i] = static_cast<float>(s);
            mag[i] = m;
            tol_def[i] = static_cast<double>(k + 1) * kEps * m + 0x1p-126;
          }
    ref().qb_conv(p, x.data(), bp, want.data(), act);
    if (act.kind == ActivationKind::none)
      expect_within(want, def, tol_def, "reference vs definition: " + what);
    opt().qb_conv(p, x.data(), bp, got.data(), act);
    for (size_t j = 0; j < ny; ++j) {
      const double m = mag[j];
      tol[j] = 1.5 * static_cast<double>(k + 1) * kEps * m + 8 * kEps * std::fabs(want[j]) +
               kEps * m * std::max(1.0, m) + 0x1p-126;
    }
    expect_within(got, want, tol, "avx2 vs reference: " + what);
  }
};

TEST_F(QbConv, Avx2AndReferenceMatchTheDefinitionForEveryScheme) {
  uint64_t seed = 500;
  for (const Case& c : kCases)
    for (const char* scheme : kSchemes) {
      for (const Activation& act : kActs) check(c, scheme, act, true, seed += 3);
      check(c, scheme, Activation::none(), false, seed += 3);
    }
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
