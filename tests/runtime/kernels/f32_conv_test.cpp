// f32_conv_gemm_6x16_avx2, f32_conv_dw_2x32_avx2, f32_conv1x1_6x16_avx2,
// f32_conv1x1_12x32_avx512 (where the CPU has AVX-512F) and the 1×1 path (gemm +
// bias_act kernels) against f32_conv_ref on shapes that hit every tail: odd
// sizes, channel counts not multiples of the 6-row tile, pixel counts not
// multiples of 16 or 32, asymmetric pads, strides 1–3, dilations, groups,
// column blocks, each activation. Tolerance: the reference sums in double;
// an f32 sum of K = c_in/groups·kh·kw products plus the bias is within
// (K + 1)·ε·Σ|terms| (γ bound), Σ|terms| obtained by running the reference
// on |x|, |w|, |bias|; activations are 1.5-Lipschitz at most (hard_swish) and
// add their own error: Cephes sigmoid/tanh ≤ 8ε relative (f32_activation_test),
// and hard_sigmoid/hard_swish round α·v + β once (fma) or twice (reference),
// ≤ ε·|v| apart, times |v| for hard_swish, |v| ≤ Σ|terms|:
// tol = 1.5·(K + 1)·ε·Σ|terms| + 8ε·|y| + ε·Σ|terms|·max(1, Σ|terms|) + 2⁻¹²⁶.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct ConvCase {
  int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block;
};

std::string label(const ConvCase& c) {
  return "conv n" + std::to_string(c.n) + " c" + std::to_string(c.c_in) + "→" +
         std::to_string(c.c_out) + " " + std::to_string(c.h) + "×" + std::to_string(c.w) + " k" +
         std::to_string(c.kh) + "×" + std::to_string(c.kw) + " s" + std::to_string(c.sh) + "," +
         std::to_string(c.sw) + " pads " + std::to_string(c.pt) + "," + std::to_string(c.pl) + "," +
         std::to_string(c.pb) + "," + std::to_string(c.pr) + " d" + std::to_string(c.dh) + "," +
         std::to_string(c.dw) + " g" + std::to_string(c.groups) + " cb" +
         std::to_string(c.column_block);
}

Conv2dParams params(const ConvCase& c) {
  Conv2dParams p;
  p.n = c.n, p.c_in = c.c_in, p.h = c.h, p.w = c.w, p.c_out = c.c_out, p.kh = c.kh, p.kw = c.kw;
  p.stride_h = c.sh, p.stride_w = c.sw, p.pad_top = c.pt, p.pad_left = c.pl;
  p.pad_bottom = c.pb, p.pad_right = c.pr, p.dil_h = c.dh, p.dil_w = c.dw, p.groups = c.groups;
  p.column_block = c.column_block;
  return p;
}

const Activation kActs[] = {
    Activation::none(),           Activation::relu(),       Activation::clip(-0.5f, 0.5f),
    Activation::hard_sigmoid(),   Activation::hard_swish(), Activation::sigmoid(),
    Activation::leaky_relu(0.1f), Activation::tanh()};

class F32Conv : public KernelVsRef {
 protected:
  // Runs `fn` (or, when null, the conv2d operator, on weights packed by
  // pack_conv2d_weights when `packed`) against f32_conv_ref.
  void check(const ConvCase& c, F32ConvFn fn, const Activation& act, bool with_bias, uint64_t seed,
             bool packed = false, double tol_scale = 1.0) {
    const Conv2dParams p = params(c);
    validate(p);
    const int64_t wn = p.c_out * (p.c_in / p.groups) * p.kh * p.kw;
    const auto x = uniform(p.n * p.c_in * p.h * p.w, seed);
    const auto w = uniform(wn, seed + 1);
    const auto bias = uniform(p.c_out, seed + 2);
    const float* bp = with_bias ? bias.data() : nullptr;
    const size_t ny = static_cast<size_t>(p.n * p.c_out * p.out_h() * p.out_w());
    std::vector<float> want(ny), got(ny, -99.f), mag(ny);
    ref().conv_gemm(p, x.data(), w.data(), bp, want.data(), act);
    if (fn) {
      fn(p, x.data(), w.data(), bp, got.data(), act);
    } else if (packed) {
      const PackedConvWeights pw = pack_conv2d_weights(p, w.data());
      // The packed path reads no w: pass none where the packed weights serve p
      // (a pointwise conv's gemm path reads w).
      conv2d(p, x.data(), pw.serves(p) && !pw.pointwise ? nullptr : w.data(), bp, got.data(), act,
             nullptr, &pw);
    } else {
      conv2d(p, x.data(), w.data(), bp, got.data(), act);
    }
    auto abs_of = [](std::vector<float> v) {
      for (float& e : v) e = std::fabs(e);
      return v;
    };
    const auto ax = abs_of(x), aw = abs_of(w), ab = abs_of(bias);
    ref().conv_gemm(p, ax.data(), aw.data(), with_bias ? ab.data() : nullptr, mag.data(), {});
    const double k = static_cast<double>(p.c_in / p.groups * p.kh * p.kw) + 1;
    std::vector<double> tol(ny);
    for (size_t i = 0; i < ny; ++i) {
      const double m = mag[i];
      tol[i] = tol_scale * (1.5 * k * kEps * m + 8 * kEps * std::fabs(want[i]) +
                            kEps * m * std::max(1.0, m)) +
               0x1p-126;
    }
    expect_within(got, want, tol,
                  label(c) + " act " + std::to_string(static_cast<int>(act.kind)) +
                      (with_bias ? " bias" : ""));
  }
};

const ConvCase kGemmCases[] = {
    // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block
    {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
    {2, 4, 11, 13, 7, 3, 3, 2, 2, 1, 0, 2, 1, 1, 1, 1, 0},
    {1, 6, 17, 19, 13, 5, 3, 1, 3, 2, 1, 0, 2, 2, 1, 1, 0},
    {1, 8, 20, 33, 12, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 2, 0},
    {1, 6, 9, 40, 9, 3, 3, 1, 1, 0, 1, 0, 1, 1, 1, 3, 0},
    {1, 1, 5, 5, 1, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, 0},
    {1, 300, 5, 6, 7, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1, 1, 0},  // K = 900: several 256-chunks
    {1, 5, 24, 24, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 48},
    {1, 5, 24, 24, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 7},
    {1, 4, 6, 70, 6, 1, 7, 1, 1, 0, 3, 0, 3, 1, 1, 1, 0},
    {1, 4, 8, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 0},  // 2×2 stride 2
    {1, 6, 9, 9, 4, 1, 1, 2, 2, 1, 1, 0, 0, 1, 1, 2, 0},  // 1×1 strided, padded
};

const ConvCase kDwCases[] = {
    {1, 3, 7, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 0},
    {2, 5, 40, 37, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 0},
    {1, 4, 33, 70, 4, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 4, 0},
    {1, 2, 12, 80, 2, 5, 5, 2, 1, 2, 2, 2, 2, 1, 1, 2, 0},
    {1, 3, 15, 45, 3, 3, 3, 1, 3, 0, 2, 1, 0, 2, 2, 3, 0},
    {1, 2, 8, 9, 2, 3, 1, 3, 1, 1, 0, 2, 0, 1, 1, 2, 0},
    {1, 2, 3, 3, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 2, 0},  // one output pixel
    // Stride 2 with an odd left pad and widths past 16 (the vector
    // deinterleave and its tail), an even pad on an odd width, stride 4.
    {1, 3, 9, 37, 3, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 3, 0},
    {1, 2, 10, 50, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2, 0},
    {1, 2, 7, 33, 2, 3, 3, 2, 2, 0, 0, 1, 1, 2, 2, 2, 0},
    {1, 2, 9, 41, 2, 3, 3, 1, 4, 1, 3, 1, 1, 1, 1, 2, 0},
};

const ConvCase kPointwiseCases[] = {
    {1, 7, 5, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},
    {2, 12, 20, 21, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 3, 0},
    {1, 16, 30, 30, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 100},
    {1, 6, 3, 4, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},     // 12 pixels: the gemm path
    {1, 8, 100, 90, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},  // 9000 pixels: gemm path on AVX2
};

TEST_F(F32Conv, Gemm6x16MatchesReference) {
  uint64_t seed = 100;
  for (const ConvCase& c : kGemmCases) {
    for (const Activation& act : kActs) check(c, opt().conv_gemm, act, true, seed += 3);
    check(c, opt().conv_gemm, Activation::none(), false, seed += 3);
  }
}

// Groups of ≤ 3 output channels: stride-1 columns by the direct path
// (segments of 12/R vectors, then of 4; blocks of 8 output rows), strided ones by the
// implicit GEMM with all of a block's 16-pixel panels at once
// (kernel_rx16np). One channel (ISNet's side outputs), two and three; groups
// of 2 and 3 channels; planes of 1–4 panels a block and a last partial
// panel; wide rows with a partial last segment; K past one 256-chunk;
// dilation; row stride; 5×5.
const ConvCase kFewChannelCases[] = {
    // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block
    {1, 64, 37, 41, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},    // 4 panels a block, tails
    {2, 9, 19, 23, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},     // two images, 2 rows
    {1, 40, 21, 35, 3, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1, 1, 0},    // 3 rows, asymmetric pads
    {1, 300, 11, 13, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},   // K = 2700: one panel a block
    {1, 120, 13, 17, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 0},   // K = 1080: 2 panels, dilated
    {1, 12, 25, 31, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},    // groups of 2 channels
    {1, 9, 30, 29, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3, 0},     // groups of 3, stride 2
    {1, 16, 20, 20, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 100},  // column block 100
    {1, 5, 19, 200, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},    // wide: 96-column segments
    {2, 7, 11, 101, 2, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1, 1, 0},    // wide, 2 rows, asymmetric pads
    {1, 4, 23, 130, 1, 3, 3, 2, 1, 1, 1, 1, 1, 2, 2, 1, 0},    // row stride 2, dilated, wide
    {1, 6, 9, 120, 3, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, 0},     // 5×5, 3 rows
};

TEST_F(F32Conv, FewChannelsMatchReference) {
  uint64_t seed = 1300;
  for (const ConvCase& c : kFewChannelCases) {
    check(c, opt().conv_gemm, Activation::none(), true, seed += 3);
    check(c, opt().conv_gemm, Activation::sigmoid(), false, seed += 3);
    check(c, nullptr, Activation::relu(), true, seed += 3, true);
  }
}

// Each output of `c` by opt().conv_gemm is one FMA chain over k = (ci, ky,
// kx) ascending from +0, padding taps included as products with 0 (no bias,
// no activation): computed here with std::fma, the kernel's bits exactly.
void expect_one_fma_chain_per_output(const ConvCase& c, uint64_t seed) {
  const Conv2dParams p = params(c);
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const auto x = uniform(p.n * p.c_in * p.h * p.w, seed);
  const auto w = uniform(p.c_out * cig * p.kh * p.kw, seed + 1);
  const int64_t oh = p.out_h(), ow = p.out_w();
  std::vector<float> want(static_cast<size_t>(p.n * p.c_out * oh * ow)), got(want.size(), -9.f);
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          float acc = 0.f;
          const int64_t g = o / cog;
          for (int64_t ci = 0; ci < cig; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                const bool in = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
                const float xv = in ? x[((b * p.c_in + g * cig + ci) * p.h + iy) * p.w + ix] : 0.f;
                acc = std::fma(w[((o * cig + ci) * p.kh + ky) * p.kw + kx], xv, acc);
              }
          want[((b * p.c_out + o) * oh + oy) * ow + ox] = acc + 0.f;
        }
  kernel_table(Isa::avx2).conv_gemm(p, x.data(), w.data(), nullptr, got.data(), Activation::none());
  expect_same(got, want, label(c));
}

/// opt().conv_gemm of `p` (seeded inputs, x[nan_at] = NaN, bias, `act`) at 1
/// and at 2 threads, checked to give the same bits; returns the 1-thread output.
std::vector<float> same_bits_at_one_and_two_threads(const Conv2dParams& p, int64_t nan_at,
                                                    const Activation& act, uint64_t seed) {
  auto x = uniform(p.n * p.c_in * p.h * p.w, seed);
  const auto w = uniform(p.c_out * (p.c_in / p.groups) * p.kh * p.kw, seed + 1);
  const auto bias = uniform(p.c_out, seed + 2);
  x[static_cast<size_t>(nan_at)] = std::numeric_limits<float>::quiet_NaN();
  const size_t ny = static_cast<size_t>(p.n * p.c_out * p.out_h() * p.out_w());
  std::vector<float> one(ny), two(ny, -99.f);
  for (auto [threads, y] : {std::pair{1, &one}, std::pair{2, &two}}) {
    linalg::ThreadLimit limit(threads);
    kernel_table(Isa::avx2).conv_gemm(p, x.data(), w.data(), bias.data(), y->data(), act);
  }
  expect_same(two, one, "2 threads against 1");
  return one;
}

TEST_F(F32Conv, FewChannelsAreOneFmaChainPerOutput) {
  uint64_t seed = 1400;
  for (const ConvCase& c : kFewChannelCases) expect_one_fma_chain_per_output(c, seed += 3);
}

TEST_F(F32Conv, FewChannelsGiveTheSameBitsAtOneAndTwoThreadsAndKeepNaN) {
  const Conv2dParams p = params({1, 64, 70, 90, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0});
  const std::vector<float> one =
      same_bits_at_one_and_two_threads(p, (5 * p.h + 33) * p.w + 47, Activation::relu(), 1500);
  // The NaN at (33, 47) reaches the outputs (32–34, 46–48), and only those.
  for (int64_t oy = 0; oy < p.out_h(); ++oy)
    for (int64_t ox = 0; ox < p.out_w(); ++ox) {
      const bool near = std::abs(oy - 33) <= 1 && std::abs(ox - 47) <= 1;
      EXPECT_EQ(std::isnan(one[oy * p.out_w() + ox]), near) << oy << "," << ox;
    }
}

// Stride-2 columns, K ≤ 64, more than 3 channels a group: direct from the
// input rows' column phases (stride2_row). The detector's 3→16 stem on an
// odd plane; pads 0 and 2 (the first tap in phase 0 or shifted left by
// one); a dilated 5-wide kernel; row stride 1 and 3; panels of 1 and 5
// rows (7 and 11 channels); two images; groups of 4 channels; widths below
// 16 (one tile past the row) and 8 (no vector phase split); K = 64 exactly.
const ConvCase kStride2DirectCases[] = {
    // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block
    {1, 3, 33, 47, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0},
    {1, 3, 20, 70, 7, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, 0},
    {2, 2, 17, 61, 11, 3, 5, 1, 2, 1, 2, 1, 2, 1, 2, 1, 0},
    {1, 1, 25, 40, 6, 5, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0},
    {1, 6, 15, 29, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 0},
    {1, 3, 9, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0},
    {1, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0},
    {1, 4, 18, 90, 9, 4, 4, 2, 2, 1, 1, 2, 2, 1, 1, 1, 0},
};

TEST_F(F32Conv, Stride2DirectMatchesReference) {
  uint64_t seed = 1600;
  for (const ConvCase& c : kStride2DirectCases) {
    for (const Activation& act : kActs) check(c, opt().conv_gemm, act, true, seed += 3);
    check(c, nullptr, Activation::none(), false, seed += 3, true);
  }
}

TEST_F(F32Conv, Stride2DirectIsOneFmaChainPerOutput) {
  uint64_t seed = 1700;
  for (const ConvCase& c : kStride2DirectCases) expect_one_fma_chain_per_output(c, seed += 3);
}

TEST_F(F32Conv, Stride2DirectGivesTheSameBitsAtOneAndTwoThreadsAndKeepsNaN) {
  const Conv2dParams p = params({1, 3, 160, 160, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0});
  const std::vector<float> one = same_bits_at_one_and_two_threads(p, (1 * p.h + 41) * p.w + 67,
                                                                  Activation::hard_swish(), 1800);
  // Input (41, 67) is read by outputs oy with 2·oy − 1 + ky = 41 (oy 20, 21)
  // and ox with 2·ox − 1 + kx = 67 (ox 33, 34), in every channel.
  for (int64_t o = 0; o < p.c_out; ++o)
    for (int64_t oy = 0; oy < p.out_h(); ++oy)
      for (int64_t ox = 0; ox < p.out_w(); ++ox) {
        const bool near = (oy == 20 || oy == 21) && (ox == 33 || ox == 34);
        EXPECT_EQ(std::isnan(one[(o * p.out_h() + oy) * p.out_w() + ox]), near)
            << o << ": " << oy << "," << ox;
      }
}

TEST_F(F32Conv, PackedWeightsMatchReference) {
  // Weights packed once (f32_conv_pack_6x16_avx2) then the packed kernel, and
  // the conv2d operator on pack_conv2d_weights' result, every path included.
  uint64_t seed = 400;
  const F32ConvFn packed_then_run = [](const Conv2dParams& p, const float* x, const float* w,
                                       const float* bias, float* y, const Activation& act) {
    const KernelTable& t = kernel_table(Isa::avx2);
    std::vector<float> pw(static_cast<size_t>(t.conv_pack(p, w, nullptr)));
    EXPECT_EQ(t.conv_pack(p, w, pw.data()), static_cast<int64_t>(pw.size()));
    t.conv_packed(p, x, pw.data(), bias, y, act);
  };
  for (const ConvCase& c : kGemmCases) {
    check(c, packed_then_run, Activation::relu(), true, seed += 3);
    check(c, nullptr, Activation::hard_swish(), true, seed += 3, true);
  }
  for (const ConvCase& c : kDwCases) check(c, nullptr, Activation::none(), true, seed += 3, true);
  for (const ConvCase& c : kPointwiseCases)
    check(c, nullptr, Activation::none(), false, seed += 3, true);
}

TEST_F(F32Conv, PackedWeightsServeOnlyTheirShape) {
  const Conv2dParams p = params(kGemmCases[0]);
  const std::vector<float> w(static_cast<size_t>(p.c_out * p.c_in * p.kh * p.kw), 1.f);
  const PackedConvWeights pw = pack_conv2d_weights(p, w.data());
  EXPECT_TRUE(pw.serves(p));
  Conv2dParams other = p;
  other.c_out += 1;
  EXPECT_FALSE(pw.serves(other));
  Conv2dParams pointwise = p;
  pointwise.kh = pointwise.kw = 1, pointwise.pad_top = pointwise.pad_left = 0;
  pointwise.pad_bottom = pointwise.pad_right = 0;
  // A pointwise conv's weights are packed for the conv1x1 kernel, and serve
  // only pointwise convs of their shape.
  const PackedConvWeights ppw = pack_conv2d_weights(pointwise, w.data());
  EXPECT_TRUE(ppw.pointwise);
  EXPECT_EQ(static_cast<int64_t>(ppw.data.size()),
            active_kernels().conv1x1_pack(pointwise, w.data(), nullptr));
  EXPECT_TRUE(ppw.serves(pointwise));
  Conv2dParams strided = pointwise;
  strided.stride_h = 2;
  EXPECT_FALSE(ppw.serves(strided));
  EXPECT_FALSE(pack_conv2d_weights(strided, w.data()).pointwise);
  EXPECT_FALSE(pack_conv2d_weights(strided, w.data()).serves(pointwise));
  Conv2dParams bad = p;
  bad.groups = 2;  // c_in 3 not divisible
  EXPECT_THROW(pack_conv2d_weights(bad, w.data()), Error);
}

TEST_F(F32Conv, Depthwise2x32MatchesReference) {
  uint64_t seed = 200;
  for (const ConvCase& c : kDwCases) {
    for (const Activation& act : kActs) check(c, opt().conv_dw, act, true, seed += 3);
    check(c, opt().conv_dw, Activation::none(), false, seed += 3);
  }
}

// Every output of the depthwise kernel is one FMA chain, the bias then the
// taps in row-major order (the padding read as zeros), whichever path
// computes it (four rows, three, two, one; 32 columns, then a block of
// 1–4 vectors whose last is masked): bit for bit against that chain written
// out here.
TEST_F(F32Conv, Depthwise2x32IsOneFmaChainPerOutput) {
  const ConvCase cases[] = {
      // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block
      {1, 3, 6, 96, 3, 5, 5, 2, 1, 2, 2, 2, 2, 1, 1, 3, 0},   // 3 rows of 96 (the classifier's)
      {2, 2, 5, 45, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},   // 5 rows: 3 + 2; 45 = 32 + 8 + 5
      {1, 2, 4, 41, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},   // 4 rows: pairs
      {1, 2, 1, 70, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},   // 1 row
      {1, 2, 9, 37, 2, 3, 3, 1, 2, 1, 1, 1, 0, 1, 1, 2, 0},   // 9 rows, stride-2 columns
      {1, 2, 11, 30, 2, 3, 3, 2, 1, 0, 1, 0, 1, 2, 1, 2, 0},  // dilated rows
      {1, 2, 7, 20, 2, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2, 0},   // 20 = 8 + 8 + 4 (det at 320²)
      {1, 2, 11, 10, 2, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2, 0},  // 10 = 8 + 2; 11 rows: 3 + 4 + 4
      {1, 2, 10, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},  // 16 columns; 10 rows: 4 + 4 + 2
      {1, 2, 3, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},    // 3 columns: one masked vector
      {1, 2, 6, 63, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0},   // 63 = 32 + 31 (the last of 7)
      {1, 2, 8, 17, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2, 0},   // stride 2, 9 columns = 8 + 1
  };
  uint64_t seed = 900;
  for (const ConvCase& c : cases) {
    const Conv2dParams p = params(c);
    validate(p);
    const int64_t oh = p.out_h(), ow = p.out_w(), taps = p.kh * p.kw;
    const auto x = uniform(p.n * p.c_in * p.h * p.w, seed += 3);
    const auto w = uniform(p.c_out * taps, seed + 1);
    const auto bias = uniform(p.c_out, seed + 2);
    std::vector<float> got(static_cast<size_t>(p.n * p.c_out * oh * ow), -99.f), want(got.size());
    opt().conv_dw(p, x.data(), w.data(), bias.data(), got.data(), Activation::none());
    for (int64_t plane = 0; plane < p.n * p.c_in; ++plane) {
      const int64_t ch = plane % p.c_in;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          float a = bias[static_cast<size_t>(ch)];
          for (int64_t ky = 0; ky < p.kh; ++ky)
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
              const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
              const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
              const float v = inside ? x[static_cast<size_t>((plane * p.h + iy) * p.w + ix)] : 0.f;
              a = std::fma(v, w[static_cast<size_t>(ch * taps + ky * p.kw + kx)], a);
            }
          want[static_cast<size_t>((plane * oh + oy) * ow + ox)] = a;
        }
    }
    EXPECT_EQ(got, want) << label(c);
  }
}

// 1×1 stride-1 unpadded shapes for the conv1x1 kernels (f32_conv1x1_6x16_avx2,
// f32_conv1x1_12x32_avx512): pixels under 16, not a multiple of 16, 32 or of
// the copied 64 / 128, planes past the in-place limit (8192 pixels, copied),
// c_out not a multiple of 6 or 12, groups, K past one 256-chunk.
const ConvCase kConv1x1Cases[] = {
    // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups, column_block
    {1, 7, 5, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},     // 45 pixels
    {1, 5, 1, 3, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},      // 3 pixels
    {2, 12, 20, 21, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 3, 0},   // groups 3, 2 images
    {1, 300, 7, 13, 13, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},  // K = 300
    {1, 16, 93, 97, 14, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},  // 9021 pixels: copied
    {1, 24, 80, 80, 18, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, 0},  // 6400 pixels, groups 2
    {1, 33, 1, 120, 37, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},  // blocks of 64: 56-pixel tail
    {1, 17, 4, 4, 25, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},    // 16 pixels
    {2, 50, 11, 3, 26, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, 0},   // 33 pixels, groups 2
};

// Activations with the epilogue's affine maps (PP-OCRv4's learnable affine
// blocks) around them: pre ×0.75 + 0.25, post ×1.5 − 0.125.
Activation with_affine(Activation a) {
  a.pre_scale = 0.75f, a.pre_shift = 0.25f, a.post_scale = 1.5f, a.post_shift = -0.125f;
  return a;
}

// The conv1x1 kernels as F32ConvFn on w as it is: each packs w as its table
// does, then runs.
void conv1x1_avx2(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                  float* y, const Activation& act) {
  std::vector<float> pw(static_cast<size_t>(f32_conv_pack_6x16_avx2(p, w, nullptr)));
  f32_conv_pack_6x16_avx2(p, w, pw.data());
  f32_conv1x1_6x16_avx2(p, x, pw.data(), bias, y, act);
}
void conv1x1_avx512(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                    float* y, const Activation& act) {
  std::vector<float> pw(static_cast<size_t>(f32_conv1x1_pack_12x32(p, w, nullptr)));
  EXPECT_EQ(f32_conv1x1_pack_12x32(p, w, pw.data()), static_cast<int64_t>(pw.size()));
  f32_conv1x1_12x32_avx512(p, x, pw.data(), bias, y, act);
}
// The avx2 table's conv1x1 (the AVX-512 kernel where the CPU has AVX-512F).
void conv1x1_table(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                   float* y, const Activation& act) {
  const KernelTable& t = kernel_table(Isa::avx2);
  std::vector<float> pw(static_cast<size_t>(t.conv1x1_pack(p, w, nullptr)));
  t.conv1x1_pack(p, w, pw.data());
  t.conv1x1(p, x, pw.data(), bias, y, act);
}

struct Conv1x1Kernel {
  const char* name;
  F32ConvFn fn;
};

// The kernels this CPU runs: the AVX2 one, the AVX-512 one with AVX-512F.
std::vector<Conv1x1Kernel> conv1x1_kernels() {
  std::vector<Conv1x1Kernel> k = {{"avx2", conv1x1_avx2}, {"table", conv1x1_table}};
  if (cpu_features().avx512f) k.push_back({"avx512", conv1x1_avx512});
  return k;
}

TEST_F(F32Conv, Conv1x1MatchesReference) {
  for (const Conv1x1Kernel& k : conv1x1_kernels()) {
    SCOPED_TRACE(k.name);
    uint64_t seed = 500;
    for (const ConvCase& c : kConv1x1Cases) {
      for (const Activation& act : kActs) check(c, k.fn, act, true, seed += 3);
      check(c, k.fn, Activation::none(), false, seed += 3);
      // The maps scale the error by at most 1.5 (post) · 0.75 (pre), plus
      // their own roundings (ε of |v| and |y|, within the bound's ε·Σ|terms|
      // and 8ε·|y| terms doubled).
      for (const Activation& act : {Activation::hard_swish(), Activation::sigmoid(),
                                    Activation::relu(), Activation::clip(-0.5f, 0.5f)})
        check(c, k.fn, with_affine(act), true, seed += 3, false, 2.0);
    }
  }
}

TEST_F(F32Conv, Conv1x1Avx512GivesTheAvx2KernelsBits) {
  // Each output is one FMA chain over ascending k from +0 in both kernels and
  // both end in f32_bias_act_avx2: the same bits, every activation and map.
  if (!cpu_features().avx512f) GTEST_SKIP() << "CPU lacks AVX-512F";
  uint64_t seed = 700;
  for (const ConvCase& c : kConv1x1Cases) {
    const Conv2dParams p = params(c);
    const auto x = uniform(p.n * p.c_in * p.h * p.w, seed += 3);
    const auto w = uniform(p.c_out * (p.c_in / p.groups), seed + 1);
    const auto bias = uniform(p.c_out, seed + 2);
    const size_t ny = static_cast<size_t>(p.n * p.c_out * p.h * p.w);
    for (const Activation& act0 : kActs) {
      for (const Activation& act : {act0, with_affine(act0)}) {
        std::vector<float> want(ny, -7.f), got(ny, -99.f);
        conv1x1_avx2(p, x.data(), w.data(), bias.data(), want.data(), act);
        conv1x1_avx512(p, x.data(), w.data(), bias.data(), got.data(), act);
        expect_same(got, want, label(c) + " act " + std::to_string(static_cast<int>(act.kind)));
      }
    }
  }
}

TEST_F(F32Conv, Conv1x1GivesTheSameBitsAtOneAndTwoThreads) {
  // In place (6400 pixels) and copied (9021): both large enough for the team.
  for (const Conv1x1Kernel& k : conv1x1_kernels()) {
    for (const ConvCase& c : {kConv1x1Cases[5], kConv1x1Cases[4]}) {
      const Conv2dParams p = params(c);
      const auto x = uniform(p.n * p.c_in * p.h * p.w, 600);
      const auto w = uniform(p.c_out * (p.c_in / p.groups), 601);
      const auto bias = uniform(p.c_out, 602);
      const size_t ny = static_cast<size_t>(p.n * p.c_out * p.h * p.w);
      std::vector<float> one(ny), two(ny, -99.f);
      {
        linalg::ThreadLimit limit(1);
        k.fn(p, x.data(), w.data(), bias.data(), one.data(), Activation::hard_swish());
      }
      {
        linalg::ThreadLimit limit(2);
        k.fn(p, x.data(), w.data(), bias.data(), two.data(), Activation::hard_swish());
      }
      expect_same(two, one, std::string(k.name) + " " + label(c) + " at 2 threads against 1");
    }
  }
}

TEST_F(F32Conv, Conv1x1PropagatesNaN) {
  // A NaN input value makes every output of its pixel NaN, a NaN weight every
  // output of its channel, through each activation (relu and clip included).
  const ConvCase c{1, 21, 5, 13, 27, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0};  // 65 pixels
  const Conv2dParams p = params(c);
  const int64_t hw = p.h * p.w;
  auto x = uniform(p.c_in * hw, 800);
  auto w = uniform(p.c_out * p.c_in, 801);
  const auto bias = uniform(p.c_out, 802);
  const int64_t pixel = 64, channel = 25;  // in a strip's tail; in the last panel
  x[static_cast<size_t>(3 * hw + pixel)] = std::nanf("");
  w[static_cast<size_t>(channel * p.c_in + 7)] = std::nanf("");
  for (const Conv1x1Kernel& k : conv1x1_kernels()) {
    for (const Activation& act : kActs) {
      std::vector<float> y(static_cast<size_t>(p.c_out * hw));
      k.fn(p, x.data(), w.data(), bias.data(), y.data(), act);
      for (int64_t o = 0; o < p.c_out; ++o) {
        for (int64_t j = 0; j < hw; ++j) {
          const bool nan = std::isnan(y[static_cast<size_t>(o * hw + j)]);
          EXPECT_EQ(nan, j == pixel || o == channel)
              << k.name << " act " << static_cast<int>(act.kind) << " channel " << o << " pixel "
              << j;
        }
      }
    }
  }
}

TEST_F(F32Conv, PointwiseOperatorMatchesReference) {
  // 1×1 stride-1 unpadded convs run the gemm and bias_act kernels of the
  // active table inside conv2d; the default table is the AVX2 one here.
  ASSERT_EQ(&active_kernels(), forced_isa() ? &kernel_table(*forced_isa()) : &opt());
  uint64_t seed = 300;
  for (const ConvCase& c : kPointwiseCases) {
    for (const Activation& act : kActs) check(c, nullptr, act, true, seed += 3);
  }
}

TEST_F(F32Conv, ReferenceByHand) {
  // 1 channel 3×3, w = [[1, 0, −1]] ×3 rows, pads 1, bias 0.5 (as tests/runtime/conv_test.cpp):
  // y[1][1] = Σ rows (x[r][0] − x[r][2]) + 0.5 = 3·(−2) + 0.5 = −5.5; y[0][0] = −(2 + 5) + 0.5.
  const ConvCase c{1, 1, 3, 3, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 0, -1, 1, 0, -1, 1, 0, -1};
  const float bias = 0.5f;
  std::vector<float> y(9);
  f32_conv_ref(params(c), x.data(), w.data(), &bias, y.data(), {});
  EXPECT_EQ(y,
            (std::vector<float>{-6.5f, -3.5f, 7.5f, -14.5f, -5.5f, 15.5f, -12.5f, -3.5f, 13.5f}));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
