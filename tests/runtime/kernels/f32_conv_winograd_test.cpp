// Winograd F(4×4, 3×3) (f32_conv_winograd_f43_pack, the scalar reference
// f32_conv_winograd_f43_ref and f32_conv_winograd_f43_avx2) against direct
// convolution (f32_conv_ref, summed in double) on shapes hitting every tail:
// planes not multiples of 4 (tiles past the edge) or of 32 (short runs),
// an odd count of runs (a block with one run), asymmetric and zero pads,
// c_out not a multiple of 6, c_in past one 256-chunk, two images, runs of
// tiles listed across rows and blocks grouped for wide channels; and dilated
// convs (tiles on each phase's outputs) at dilations 2, 3, 4 and 8 on odd
// planes with odd, asymmetric and oversized pads. Bound (registry.h): |got − direct| ≤
// 2⁻¹⁶·Σ|w||x| + 2⁻²⁰ per output, Σ|w||x| by running the direct reference on
// |x|, |w| (no bias, no activation).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/kernels/f32_winograd_f43.h"
#include "runtime/kernels/kernel_compare.h"
#include "tailor/core/cpu.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct WinogradCase {
  int64_t n, c_in, h, w, c_out, pt, pl, pb, pr, dh = 1, dw = 1;
};

Conv2dParams params(const WinogradCase& c) {
  Conv2dParams p;
  p.n = c.n, p.c_in = c.c_in, p.h = c.h, p.w = c.w, p.c_out = c.c_out, p.kh = p.kw = 3;
  p.pad_top = c.pt, p.pad_left = c.pl, p.pad_bottom = c.pb, p.pad_right = c.pr;
  p.dil_h = c.dh, p.dil_w = c.dw;
  return p;
}

std::string label(const WinogradCase& c) {
  return "winograd n" + std::to_string(c.n) + " c" + std::to_string(c.c_in) + "→" +
         std::to_string(c.c_out) + " " + std::to_string(c.h) + "×" + std::to_string(c.w) +
         " pads " + std::to_string(c.pt) + "," + std::to_string(c.pl) + "," + std::to_string(c.pb) +
         "," + std::to_string(c.pr) + " dilation " + std::to_string(c.dh) + "," +
         std::to_string(c.dw);
}

const WinogradCase kCases[] = {
    // n, c_in, h, w, c_out, pt, pl, pb, pr
    {1, 8, 16, 16, 8, 1, 1, 1, 1},      // 4×4 tiles: one run, a block with one run
    {1, 9, 19, 37, 13, 1, 1, 1, 1},     // partial tiles both ways, runs of 8 and 2
    {2, 16, 23, 70, 24, 1, 1, 1, 1},    // two images, runs of 8, 8 and 2 per row
    {1, 11, 17, 41, 7, 0, 2, 2, 0},     // asymmetric pads
    {1, 12, 20, 33, 10, 0, 0, 0, 0},    // no pads
    {1, 300, 9, 18, 8, 1, 1, 1, 1},     // c_in past one 256-chunk
    {1, 8, 6, 200, 6, 1, 1, 1, 1},      // one tile row, 50 tiles
    {1, 40, 10, 40, 36, 1, 1, 1, 1},    // 10 tiles a row: listed runs across rows
    {1, 264, 28, 28, 125, 1, 1, 1, 1},  // wide: 2 blocks a group (of 4), c_out 125
};

// Dilated: every phase count both ways (odd planes, phases of unequal size),
// pads = dilation, odd and asymmetric pads, pads past the dilation, a plane
// smaller than the dilation (phases without outputs), unequal dilations.
const WinogradCase kDilatedCases[] = {
    // n, c_in, h, w, c_out, pt, pl, pb, pr, dh, dw
    {1, 8, 17, 19, 9, 2, 2, 2, 2, 2, 2},      // dilation 2, odd plane
    {2, 9, 23, 21, 13, 3, 3, 3, 3, 3, 3},     // dilation 3, two images
    {1, 8, 33, 30, 7, 4, 1, 3, 6, 4, 4},      // dilation 4, asymmetric pads
    {1, 12, 37, 35, 8, 8, 8, 8, 8, 8, 8},     // dilation 8, 37×35
    {1, 8, 16, 16, 6, 8, 8, 8, 8, 8, 8},      // dilation 8 on 16×16 (ISNet's RSU4F)
    {1, 10, 5, 7, 8, 9, 5, 8, 10, 8, 4},      // 5×7 input, pads past the dilation
    {1, 8, 13, 29, 11, 0, 0, 0, 0, 2, 3},     // no pads, dilation 2 × 3
    {1, 300, 11, 13, 8, 2, 2, 2, 2, 2, 2},    // c_in past one 256-chunk
    {1, 200, 28, 28, 170, 2, 2, 2, 2, 2, 2},  // wide: 2 blocks a group (of 4)
};

class F32ConvWinograd : public KernelVsRef {
 protected:
  void check(const WinogradCase& c, F32ConvPackedFn fn, const Activation& act, bool with_bias,
             uint64_t seed) {
    const Conv2dParams p = params(c);
    validate(p);
    const auto x = uniform(p.n * p.c_in * p.h * p.w, seed);
    const auto w = uniform(p.c_out * p.c_in * 9, seed + 1);
    const auto bias = uniform(p.c_out, seed + 2);
    const float* bp = with_bias ? bias.data() : nullptr;
    const size_t ny = static_cast<size_t>(p.n * p.c_out * p.out_h() * p.out_w());
    std::vector<float> want(ny), got(ny, -99.f), mag(ny), pre(ny);
    f32_conv_ref(p, x.data(), w.data(), bp, want.data(), act);
    std::vector<float> packed(
        static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
    EXPECT_EQ(f32_conv_winograd_f43_pack(p, w.data(), packed.data()),
              static_cast<int64_t>(packed.size()));
    fn(p, x.data(), packed.data(), bp, got.data(), act);
    auto abs_of = [](std::vector<float> v) {
      for (float& e : v) e = std::fabs(e);
      return v;
    };
    const auto ax = abs_of(x), aw = abs_of(w);
    f32_conv_ref(p, ax.data(), aw.data(), nullptr, mag.data(), {});
    // The transforms mix a tile's whole 6×6 patch into each of its outputs:
    // the bound takes the largest Σ|w||x| among the tile's outputs.
    const int64_t oh = p.out_h(), ow = p.out_w();
    for (int64_t plane = 0; plane < p.n * p.c_out; ++plane) {
      float* mp = mag.data() + plane * oh * ow;
      for (const detail::WinogradTile& t : detail::winograd_tiles(p)) {
        float most = 0;
        for (int i = 0; i < t.rows; ++i)
          for (int j = 0; j < t.cols; ++j)
            most = std::max(most, mp[(t.oy + i * p.dil_h) * ow + t.ox + j * p.dil_w]);
        for (int i = 0; i < t.rows; ++i)
          for (int j = 0; j < t.cols; ++j)
            mp[(t.oy + i * p.dil_h) * ow + t.ox + j * p.dil_w] = most;
      }
    }
    // Activations are 1.5-Lipschitz at most (hard_swish) and add ≤ 8ε·|y|
    // plus ε·|v|·max(1, |v|) of their own (f32_conv_test.cpp).
    std::vector<double> tol(ny);
    double worst = 0;
    f32_conv_ref(p, x.data(), w.data(), bp, pre.data(), {});
    for (size_t i = 0; i < ny; ++i) {
      const double m = mag[i], v = std::fabs(pre[i]);
      tol[i] = 1.5 * (0x1p-16 * m + 0x1p-20) + 8 * kEps * std::fabs(want[i]) +
               kEps * v * std::max(1.0, v);
      if (act.kind == ActivationKind::none)
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / (m + 1e-30));
    }
    expect_within(got, want, tol, label(c) + " act " + std::to_string(static_cast<int>(act.kind)));
    // Measured: ≤ 2·10⁻⁶ (≈ 2⁻¹⁹) of Σ|w||x| on these cases, 8× inside the bound.
    if (act.kind == ActivationKind::none)
      RecordProperty(label(c) + "_worst", std::to_string(worst));
  }
};

TEST_F(F32ConvWinograd, ReferenceMatchesDirectConvolution) {
  uint64_t seed = 700;
  for (const WinogradCase& c : kCases) {
    check(c, f32_conv_winograd_f43_ref, Activation::none(), true, seed += 3);
    check(c, f32_conv_winograd_f43_ref, Activation::hard_swish(), false, seed += 3);
  }
}

TEST_F(F32ConvWinograd, Avx2MatchesDirectConvolution) {
  uint64_t seed = 800;
  for (const WinogradCase& c : kCases) {
    check(c, opt().conv_winograd, Activation::none(), true, seed += 3);
    check(c, opt().conv_winograd, Activation::hard_swish(), true, seed += 3);
    check(c, opt().conv_winograd, Activation::relu(), false, seed += 3);
  }
}

TEST_F(F32ConvWinograd, DilatedConvsMatchDirectConvolution) {
  uint64_t seed = 1000;
  for (const WinogradCase& c : kDilatedCases) {
    check(c, f32_conv_winograd_f43_ref, Activation::none(), true, seed += 3);
    check(c, opt().conv_winograd, Activation::none(), true, seed += 3);
    check(c, opt().conv_winograd, Activation::hard_swish(), false, seed += 3);
  }
}

TEST_F(F32ConvWinograd, Avx512MatchesDirectConvolutionAndGivesTheAvx2Bits) {
  // Same products in the same order and the AVX2 transforms: the same bits
  // as f32_conv_winograd_f43_avx2, every case, undilated and dilated.
  if (!cpu_features().avx512f) GTEST_SKIP() << "CPU lacks AVX-512F";
  uint64_t seed = 1200;
  std::vector<WinogradCase> cases(std::begin(kCases), std::end(kCases));
  cases.insert(cases.end(), std::begin(kDilatedCases), std::end(kDilatedCases));
  cases.push_back({1, 64, 37, 45, 19, 1, 1, 1, 1});  // an odd count of blocks per item
  for (const WinogradCase& c : cases) {
    check(c, f32_conv_winograd_f43_avx512, Activation::none(), true, seed += 3);
    const Conv2dParams p = params(c);
    const auto x = uniform(p.n * p.c_in * p.h * p.w, seed += 3);
    const auto w = uniform(p.c_out * p.c_in * 9, seed + 1);
    const auto bias = uniform(p.c_out, seed + 2);
    std::vector<float> packed(
        static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
    f32_conv_winograd_f43_pack(p, w.data(), packed.data());
    const size_t ny = static_cast<size_t>(p.n * p.c_out * p.out_h() * p.out_w());
    std::vector<float> want(ny, -7.f), got(ny, -99.f);
    f32_conv_winograd_f43_avx2(p, x.data(), packed.data(), bias.data(), want.data(),
                               Activation::relu());
    f32_conv_winograd_f43_avx512(p, x.data(), packed.data(), bias.data(), got.data(),
                                 Activation::relu());
    expect_same(got, want, label(c) + " avx512 against avx2");
  }
}

TEST_F(F32ConvWinograd, Avx512GivesTheSameBitsAtOneAndTwoThreadsAndKeepsNaN) {
  if (!cpu_features().avx512f) GTEST_SKIP() << "CPU lacks AVX-512F";
  for (const WinogradCase& c : {WinogradCase{1, 64, 45, 47, 40, 1, 1, 1, 1},
                                WinogradCase{1, 64, 45, 47, 40, 2, 2, 2, 2, 2, 2}}) {
    const Conv2dParams p = params(c);
    auto x = uniform(p.c_in * p.h * p.w, 1250);
    x[(7 * p.h + 20) * p.w + 21] = std::numeric_limits<float>::quiet_NaN();
    const auto w = uniform(p.c_out * p.c_in * 9, 1251);
    const auto bias = uniform(p.c_out, 1252);
    std::vector<float> packed(
        static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
    f32_conv_winograd_f43_pack(p, w.data(), packed.data());
    const size_t ny = static_cast<size_t>(p.c_out * p.out_h() * p.out_w());
    std::vector<float> one(ny), two(ny, -99.f), direct(ny);
    {
      linalg::ThreadLimit limit(1);
      f32_conv_winograd_f43_avx512(p, x.data(), packed.data(), bias.data(), one.data(), {});
    }
    {
      linalg::ThreadLimit limit(2);
      f32_conv_winograd_f43_avx512(p, x.data(), packed.data(), bias.data(), two.data(), {});
    }
    expect_same(two, one, label(c) + " at 2 threads against 1");
    // Every output the NaN reaches in the direct sum is NaN here too (the
    // transforms spread it over the whole tile, never drop it).
    f32_conv_ref(p, x.data(), w.data(), bias.data(), direct.data(), {});
    int64_t nans = 0;
    for (size_t i = 0; i < ny; ++i) {
      if (!std::isnan(direct[i])) continue;
      ++nans;
      EXPECT_TRUE(std::isnan(one[i])) << label(c) << " output " << i;
    }
    EXPECT_EQ(nans, p.c_out * 9) << label(c);
  }
}

TEST_F(F32ConvWinograd, DilatedGivesTheSameBitsAtOneAndTwoThreads) {
  // Large enough for the copies and the kernel to run on the OpenMP team.
  const Conv2dParams p = params({1, 64, 45, 47, 40, 4, 4, 4, 4, 4, 4});
  const auto x = uniform(p.c_in * p.h * p.w, 1100);
  const auto w = uniform(p.c_out * p.c_in * 9, 1101);
  const auto bias = uniform(p.c_out, 1102);
  std::vector<float> packed(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
  f32_conv_winograd_f43_pack(p, w.data(), packed.data());
  const size_t ny = static_cast<size_t>(p.c_out * p.out_h() * p.out_w());
  std::vector<float> one(ny), two(ny);
  {
    linalg::ThreadLimit limit(1);
    opt().conv_winograd(p, x.data(), packed.data(), bias.data(), one.data(), Activation::relu());
  }
  {
    linalg::ThreadLimit limit(2);
    opt().conv_winograd(p, x.data(), packed.data(), bias.data(), two.data(), Activation::relu());
  }
  expect_same(two, one, "dilation 4 at 2 threads against 1");
}

TEST_F(F32ConvWinograd, PackGivesTheReferencesBitsAtOneAndTwoThreadsAndKeepsNaN) {
  // Panels past c_out (zero rows), channel blocks past 64 with a short tail,
  // and a weight large enough to run on two threads.
  for (const auto& [c_out, c_in] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {6, 64}, {7, 65}, {13, 130}, {40, 64}, {512, 200}}) {
    Conv2dParams p;
    p.c_out = c_out, p.c_in = c_in, p.kh = p.kw = 3, p.h = p.w = 8;
    auto w = uniform(c_out * c_in * 9, 1300 + static_cast<uint64_t>(c_in));
    w[0] = std::numeric_limits<float>::quiet_NaN();
    w[w.size() - 1] = std::numeric_limits<float>::infinity();
    const int64_t size = f32_conv_winograd_f43_pack(p, w.data(), nullptr);
    ASSERT_EQ(size, f32_conv_winograd_f43_pack_ref(p, w.data(), nullptr));
    const size_t n = static_cast<size_t>(size);
    std::vector<float> want(n, -99.f), one(n, -99.f), two(n, -98.f);
    f32_conv_winograd_f43_pack_ref(p, w.data(), want.data());
    {
      linalg::ThreadLimit limit(1);
      f32_conv_winograd_f43_pack(p, w.data(), one.data());
    }
    {
      linalg::ThreadLimit limit(2);
      f32_conv_winograd_f43_pack(p, w.data(), two.data());
    }
    const std::string name = std::to_string(c_in) + "→" + std::to_string(c_out);
    EXPECT_EQ(std::memcmp(one.data(), want.data(), n * sizeof(float)), 0) << name;
    EXPECT_EQ(std::memcmp(two.data(), want.data(), n * sizeof(float)), 0) << name << " 2 threads";
    // Row 0's kernel on channel 0 holds the NaN: its 36 points are NaN.
    const int64_t panels = (c_out + 5) / 6;
    for (int64_t xi = 0; xi < 36; ++xi)
      EXPECT_TRUE(std::isnan(one[static_cast<size_t>(xi * panels * c_in * 6)]))
          << name << " " << xi;
  }
}

TEST_F(F32ConvWinograd, PackOfAKernelOfOnesIsTheOuterProductOfGsRowSums) {
  // g = 1 everywhere: U = (G·1)(G·1)ᵀ, G's row sums 1/4, −1/2, −1/6, 7/24,
  // 1/8, 1 (Lavin & Gray's G for F(4, 3)); point ξ = 6i + j of row 0 and
  // channel 0 sits at u[ξ·P·c_in·6].
  const double s[6] = {0.25, -0.5, -1.0 / 6, 7.0 / 24, 0.125, 1.0};
  Conv2dParams p;
  p.c_out = 1, p.c_in = 1, p.kh = p.kw = 3, p.h = p.w = 8;
  const std::vector<float> w(9, 1.f);
  std::vector<float> u(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
  f32_conv_winograd_f43_pack(p, w.data(), u.data());
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      EXPECT_FLOAT_EQ(u[static_cast<size_t>((i * 6 + j) * 6)], static_cast<float>(s[i] * s[j]))
          << i << "," << j;
}

TEST_F(F32ConvWinograd, DilatedTilesByHand) {
  // 5×3 outputs at dilation 2 (pads 2): rows of phase 0 are outputs 0, 2, 4
  // (one tile, 3 valid), of phase 1 outputs 1, 3 (one tile, 2 valid);
  // columns 0, 2 and 1: two tiles of 2 and 1 valid. Patches start at the
  // first output minus the pads.
  Conv2dParams p = params({1, 8, 5, 3, 8, 2, 2, 2, 2, 2, 2});
  const std::vector<detail::WinogradTile> t = detail::winograd_tiles(p);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(detail::winograd_tile_count(p), 4);
  const int64_t want[4][6] = {
      {-2, -2, 0, 0, 3, 2}, {-2, -1, 0, 1, 3, 1}, {-1, -2, 1, 0, 2, 2}, {-1, -1, 1, 1, 2, 1}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t[i].iy, want[i][0]) << i;
    EXPECT_EQ(t[i].ix, want[i][1]) << i;
    EXPECT_EQ(t[i].oy, want[i][2]) << i;
    EXPECT_EQ(t[i].ox, want[i][3]) << i;
    EXPECT_EQ(t[i].rows, want[i][4]) << i;
    EXPECT_EQ(t[i].cols, want[i][5]) << i;
  }
  // Dilation 8 on 32×32 outputs: 8 phases of 4 outputs a side, one tile
  // each: 64 tiles, as undilated; on 16×16 outputs also 64 tiles (of 2×2
  // valid outputs each), 4× the undilated 16.
  p = params({1, 8, 32, 32, 8, 8, 8, 8, 8, 8, 8});
  EXPECT_EQ(detail::winograd_tile_count(p), 64);
  p = params({1, 8, 16, 16, 8, 8, 8, 8, 8, 8, 8});
  EXPECT_EQ(detail::winograd_tile_count(p), 64);
}

TEST_F(F32ConvWinograd, Conv2dPicksItWherePackedAndThePlanePays) {
  // Packed at load for 3×3 stride-1 one-group convs with ≥ 8 channels each
  // way; conv2d then runs conv_winograd on planes of at least the table's
  // winograd_min_plane (16, or 8 with the AVX-512 products) a side and the
  // implicit GEMM below, bit for bit as those kernels alone (by default;
  // with TAILOR_CONV_WINOGRAD=0 never).
  unsetenv("TAILOR_CONV_WINOGRAD");
  const int64_t min_plane = active_kernels().winograd_min_plane;
  for (const int64_t side : {min_plane - 1, min_plane, int64_t{24}}) {
    const WinogradCase c{1, 8, side, side, 9, 1, 1, 1, 1};
    const Conv2dParams p = params(c);
    const auto x = uniform(p.c_in * p.h * p.w, 900);
    const auto w = uniform(p.c_out * p.c_in * 9, 901);
    const PackedConvWeights pw = pack_conv2d_weights(p, w.data());
    ASSERT_FALSE(pw.winograd.empty());
    const size_t ny = static_cast<size_t>(p.c_out * p.out_h() * p.out_w());
    std::vector<float> got(ny), want(ny);
    conv2d(p, x.data(), nullptr, nullptr, got.data(), Activation::relu(), nullptr, &pw);
    if (side >= min_plane) {
      active_kernels().conv_winograd(p, x.data(), pw.winograd.data(), nullptr, want.data(),
                                     Activation::relu());
    } else {
      active_kernels().conv_packed(p, x.data(), pw.data.data(), nullptr, want.data(),
                                   Activation::relu());
    }
    expect_same(got, want, label(c));
  }
  for (const int64_t dil : {2, 8, 16}) {
    // Dilated runs on 24×24 (pads = dilation): at dilation 2, 4 phases of
    // 12×12 outputs, 3×3 tiles each, keep 576 of 16·36 outputs and conv2d
    // runs Winograd; at dilation 8, 64 phases of 3×3 outputs, a tile each,
    // keep 576 of 16·64 (0.56); at dilation 16 (pads 16), 16 phases a side
    // of 1 or 2 outputs, a tile each, keep 576 of 16·256 (0.14), below the
    // rule's 0.5: the implicit GEMM serves that run.
    const Conv2dParams p = params({1, 8, 24, 24, 9, dil, dil, dil, dil, dil, dil});
    const auto x = uniform(p.c_in * p.h * p.w, 902);
    const auto w = uniform(p.c_out * p.c_in * 9, 903);
    const PackedConvWeights pw = pack_conv2d_weights(p, w.data());
    ASSERT_FALSE(pw.winograd.empty());
    const size_t ny = static_cast<size_t>(p.c_out * p.out_h() * p.out_w());
    std::vector<float> got(ny), want(ny);
    conv2d(p, x.data(), nullptr, nullptr, got.data(), {}, nullptr, &pw);
    if (dil < 16) {
      active_kernels().conv_winograd(p, x.data(), pw.winograd.data(), nullptr, want.data(), {});
    } else {
      active_kernels().conv_packed(p, x.data(), pw.data.data(), nullptr, want.data(), {});
    }
    expect_same(got, want, "dilation " + std::to_string(dil) + " run of packed weights");
  }
  {
    setenv("TAILOR_CONV_WINOGRAD", "0", 1);
    const Conv2dParams p = params({1, 8, 24, 24, 9, 1, 1, 1, 1});
    const auto x = uniform(p.c_in * p.h * p.w, 904);
    const auto w = uniform(p.c_out * p.c_in * 9, 905);
    const PackedConvWeights pw = pack_conv2d_weights(p, w.data());
    const size_t ny = static_cast<size_t>(p.c_out * p.out_h() * p.out_w());
    std::vector<float> got(ny), want(ny);
    conv2d(p, x.data(), nullptr, nullptr, got.data(), {}, nullptr, &pw);
    active_kernels().conv_packed(p, x.data(), pw.data.data(), nullptr, want.data(), {});
    expect_same(got, want, "Winograd off with TAILOR_CONV_WINOGRAD=0");
    unsetenv("TAILOR_CONV_WINOGRAD");
  }
  Conv2dParams few = params({1, 4, 20, 20, 9, 1, 1, 1, 1});  // c_in < 8
  const std::vector<float> w(static_cast<size_t>(few.c_out * few.c_in * 9), 1.f);
  EXPECT_TRUE(pack_conv2d_weights(few, w.data()).winograd.empty());
  few.c_in = 8, few.stride_h = 2;  // strided
  const std::vector<float> w8(static_cast<size_t>(few.c_out * few.c_in * 9), 1.f);
  EXPECT_TRUE(pack_conv2d_weights(few, w8.data()).winograd.empty());
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
