// Conv kernels: a hand-computed 3×3 case, then every path (depthwise direct,
// 1×1 GEMM, im2col + GEMM, 1-D) against direct loops written here from the
// ONNX Conv definition, on random shapes covering groups, dilations,
// asymmetric pads and strides; fused activations; thread-count independence;
// parameter errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels {
namespace {

using testing::expect_close;
using testing::random_values;

// ONNX Conv by definition: y[b, o, oy, ox] = bias[o] + Σ_{ci, ky, kx}
// x[b, g·cig + ci, oy·sh − pt + ky·dh, ox·sw − pl + kx·dw] · w[o, ci, ky, kx]
// with g = o / cog and x = 0 outside the image. Also returns Σ|terms|.
void reference_conv(const Conv2dParams& p, const std::vector<float>& x, const std::vector<float>& w,
                    const float* bias, std::vector<double>& y, std::vector<double>& mag) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  y.assign(static_cast<size_t>(p.n * p.c_out * oh * ow), 0.0);
  mag.assign(y.size(), 0.0);
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = bias ? bias[o] : 0.0, m = bias ? std::fabs(bias[o]) : 0.0;
          const int64_t g = o / cog;
          for (int64_t ci = 0; ci < cig; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                const double t =
                    static_cast<double>(x[((b * p.c_in + g * cig + ci) * p.h + iy) * p.w + ix]) *
                    w[((o * cig + ci) * p.kh + ky) * p.kw + kx];
                s += t;
                m += std::fabs(t);
              }
          const size_t i = static_cast<size_t>(((b * p.c_out + o) * oh + oy) * ow + ox);
          y[i] = s;
          mag[i] = m;
        }
}

TEST(ConvKernel, HandComputed3x3) {
  // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], w = [[1, 0, -1], [1, 0, -1], [1, 0, -1]]
  // (a horizontal-difference filter), pads 1, stride 1, bias 0.5:
  // y[i][j] = Σ_rows (x[r][j−1] − x[r][j+1]) over rows i−1..i+1 in the image, + 0.5.
  //   y[0][0] = (0 − 2) + (0 − 5) + 0.5 = −6.5      y[0][1] = (1 − 3) + (4 − 6) + 0.5 = −3.5
  //   y[0][2] = (2 − 0) + (5 − 0) + 0.5 = 7.5
  //   y[1][0] = −(2 + 5 + 8) + 0.5 = −14.5          y[1][1] = −2·3 + 0.5 = −5.5
  //   y[1][2] = (2 + 5 + 8) + 0.5 = 15.5
  //   y[2][0] = −(5 + 8) + 0.5 = −12.5              y[2][1] = −4 + 0.5 = −3.5
  //   y[2][2] = 13.5
  Conv2dParams p;
  p.c_in = 1, p.h = 3, p.w = 3, p.c_out = 1, p.kh = 3, p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> w = {1, 0, -1, 1, 0, -1, 1, 0, -1};
  const float bias = 0.5f;
  std::vector<float> y(9);
  conv2d(p, x.data(), w.data(), &bias, y.data());
  const std::vector<float> want = {-6.5f, -3.5f, 7.5f, -14.5f, -5.5f, 15.5f, -12.5f, -3.5f, 13.5f};
  EXPECT_EQ(y, want);
  // The same with Relu fused: negatives become 0.
  conv2d(p, x.data(), w.data(), &bias, y.data(), Activation::relu());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 7.5f, 0, 0, 15.5f, 0, 0, 13.5f}));
  // Stride 2 keeps the corners: y = [[−6.5, 7.5], [−12.5, 13.5]].
  p.stride_h = p.stride_w = 2;
  std::vector<float> y2(4);
  conv2d(p, x.data(), w.data(), &bias, y2.data());
  EXPECT_EQ(y2, (std::vector<float>{-6.5f, 7.5f, -12.5f, 13.5f}));
}

TEST(ConvKernel, HandComputedDepthwiseAndPointwise) {
  // Depthwise, 2 channels, 1×1 input planes of 2×2, kernel 2×2, no pads:
  // channel 0: x = [1, 2, 3, 4], w = [1, 1, 1, 1] → 10; channel 1: x = [1, 0, 0, 1],
  // w = [2, 3, 4, 5] → 2 + 5 = 7.
  Conv2dParams p;
  p.c_in = p.c_out = p.groups = 2;
  p.h = p.w = p.kh = p.kw = 2;
  const std::vector<float> x = {1, 2, 3, 4, 1, 0, 0, 1};
  const std::vector<float> w = {1, 1, 1, 1, 2, 3, 4, 5};
  std::vector<float> y(2);
  conv2d(p, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{10, 7}));
  // Pointwise 1×1: 2 in, 1 out, w = [2, −1]: y = 2·x0 − x1 per pixel.
  Conv2dParams q;
  q.c_in = 2, q.c_out = 1, q.h = 1, q.w = 2;
  const std::vector<float> xq = {1, 2, 5, 7}, wq = {2, -1};
  std::vector<float> yq(2);
  conv2d(q, xq.data(), wq.data(), nullptr, yq.data());
  EXPECT_EQ(yq, (std::vector<float>{-3, -3}));
}

void check_against_reference(const Conv2dParams& p, uint64_t seed, bool with_bias) {
  const auto x = random_values(p.n * p.c_in * p.h * p.w, seed);
  const auto w = random_values(p.c_out * (p.c_in / p.groups) * p.kh * p.kw, seed + 1);
  const auto bias = random_values(p.c_out, seed + 2);
  std::vector<double> want, mag;
  reference_conv(p, x, w, with_bias ? bias.data() : nullptr, want, mag);
  std::vector<float> y(want.size(), -99.f);
  std::vector<float> scratch(static_cast<size_t>(conv2d_scratch_size(p)) + 1);
  conv2d(p, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(), {}, scratch.data());
  const std::string what = "conv n" + std::to_string(p.n) + " c" + std::to_string(p.c_in) + "→" +
                           std::to_string(p.c_out) + " " + std::to_string(p.h) + "×" +
                           std::to_string(p.w) + " k" + std::to_string(p.kh) + "×" +
                           std::to_string(p.kw) + " s" + std::to_string(p.stride_h) + "," +
                           std::to_string(p.stride_w) + " d" + std::to_string(p.dil_h) + "," +
                           std::to_string(p.dil_w) + " pads " + std::to_string(p.pad_top) + "," +
                           std::to_string(p.pad_left) + "," + std::to_string(p.pad_bottom) + "," +
                           std::to_string(p.pad_right) + " g" + std::to_string(p.groups);
  expect_close(y, want, mag, 1e-5, 1e-6, what);
}

TEST(ConvKernel, MatchesDefinitionOnRandomShapes) {
  // Each case: n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups.
  const std::vector<std::vector<int64_t>> cases = {
      {1, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    // plain 3×3
      {2, 4, 10, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},    // stride 2, batch 2
      {1, 6, 8, 9, 4, 3, 2, 1, 2, 0, 1, 2, 0, 1, 1, 2},     // asymmetric pads, groups 2
      {1, 4, 12, 13, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},   // dilation 2
      {1, 6, 11, 10, 6, 3, 3, 2, 1, 0, 3, 1, 2, 3, 2, 3},   // mixed everything, groups 3
      {1, 16, 7, 20, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   // pointwise GEMM path
      {2, 8, 5, 6, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 4},    // pointwise, grouped
      {1, 5, 6, 7, 3, 1, 1, 2, 2, 1, 0, 0, 1, 1, 1, 1},     // 1×1 with stride and pads: im2col
      {1, 4, 1, 40, 5, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1, 1},    // 1×3 (rec model)
      {1, 8, 13, 45, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},   // depthwise 3×3, stride 1
      {2, 7, 14, 37, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 7},   // depthwise 3×3, stride 2
      {1, 5, 12, 70, 5, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 5},   // depthwise 5×5
      {1, 6, 11, 33, 6, 5, 5, 2, 1, 2, 2, 2, 2, 1, 1, 6},   // depthwise 5×5, stride (2, 1)
      {1, 4, 9, 41, 4, 5, 5, 1, 2, 2, 2, 2, 2, 1, 1, 4},    // depthwise 5×5, stride (1, 2)
      {1, 3, 10, 19, 3, 3, 3, 3, 3, 0, 2, 1, 0, 2, 3, 3},   // depthwise, stride 3, dilation
      {1, 2, 4, 5, 2, 4, 5, 1, 1, 0, 0, 0, 0, 1, 1, 2},     // depthwise kernel = input
      {1, 40, 9, 23, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // K = 360 > one 256 chunk, 13 = 2·6 + 1
      {2, 64, 6, 37, 14, 3, 3, 1, 2, 1, 0, 2, 1, 1, 1, 2},  // K = 288 per group, stride_w 2
      {1, 3, 20, 75, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},  // the stems: 3 → 16, stride 2
  };
  uint64_t seed = 100;
  for (const auto& c : cases) {
    Conv2dParams p{c[0], c[1], c[2],  c[3],  c[4],  c[5],  c[6],  c[7],
                   c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15]};
    check_against_reference(p, seed, true);
    check_against_reference(p, seed + 7, false);
    seed += 10;
  }
}

TEST(ConvKernel, Conv1dMatchesDefinition) {
  // Silero VAD's shapes in small: k 3 pads 1 strides 1/2, and the STFT-like
  // k 16 stride 8 without pads. y[b, o, t] = bias[o] + Σ_{ci, k} x[b, ci, t·s − pb + k·d]·w[o, ci,
  // k].
  for (const auto& c : std::vector<std::vector<int64_t>>{{1, 3, 50, 4, 3, 1, 1, 1, 1},
                                                         {2, 4, 33, 6, 3, 2, 1, 1, 1},
                                                         {1, 1, 64, 5, 16, 8, 0, 0, 1},
                                                         {1, 4, 20, 4, 3, 1, 2, 0, 2}}) {
    Conv1dParams p;
    p.n = c[0], p.c_in = c[1], p.len = c[2], p.c_out = c[3], p.k = c[4], p.stride = c[5];
    p.pad_begin = c[6], p.pad_end = c[7], p.dil = c[8];
    const auto x = random_values(p.n * p.c_in * p.len, 7);
    const auto w = random_values(p.c_out * p.c_in * p.k, 8);
    const auto bias = random_values(p.c_out, 9);
    const int64_t ol = p.out_len();
    std::vector<double> want(static_cast<size_t>(p.n * p.c_out * ol)), mag(want.size());
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t o = 0; o < p.c_out; ++o)
        for (int64_t t = 0; t < ol; ++t) {
          double s = bias[o], m = std::fabs(bias[o]);
          for (int64_t ci = 0; ci < p.c_in; ++ci)
            for (int64_t k = 0; k < p.k; ++k) {
              const int64_t i = t * p.stride - p.pad_begin + k * p.dil;
              if (i < 0 || i >= p.len) continue;
              const double term =
                  double(x[(b * p.c_in + ci) * p.len + i]) * w[(o * p.c_in + ci) * p.k + k];
              s += term;
              m += std::fabs(term);
            }
          want[(b * p.c_out + o) * ol + t] = s;
          mag[(b * p.c_out + o) * ol + t] = m;
        }
    std::vector<float> y(want.size());
    conv1d(p, x.data(), w.data(), bias.data(), y.data());
    expect_close(y, want, mag, 1e-5, 1e-6, "conv1d k" + std::to_string(p.k));
  }
}

TEST(ConvKernel, FusedActivationsFollowTheirDefinitions) {
  // Each activation applied to the conv output must equal the ONNX formula
  // applied to the unfused output, on the depthwise and on the GEMM path.
  for (int64_t groups : {1, 4}) {
    Conv2dParams p;
    p.c_in = 4, p.c_out = 4, p.h = 6, p.w = 21, p.kh = p.kw = 3, p.groups = groups;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
    const auto x = random_values(p.c_in * p.h * p.w, 31);
    auto w = random_values(p.c_out * (p.c_in / groups) * 9, 32);
    for (float& v : w) v *= 3.f;  // spread the outputs over the activations' kinks
    const auto bias = random_values(p.c_out, 33);
    std::vector<float> plain(static_cast<size_t>(p.c_out * p.h * p.w)), fused(plain.size());
    conv2d(p, x.data(), w.data(), bias.data(), plain.data());
    struct Case {
      Activation act;
      double (*f)(double);
    };
    const std::vector<Case> cases = {
        {Activation::relu(), [](double v) { return std::max(v, 0.0); }},
        {Activation::clip(0.f, 6.f), [](double v) { return std::min(std::max(v, 0.0), 6.0); }},
        {Activation::hard_sigmoid(0.2f, 0.5f),
         [](double v) { return std::min(std::max(double(0.2f) * v + 0.5, 0.0), 1.0); }},
        {Activation::hard_swish(),
         [](double v) { return v * std::min(std::max(double(1.f / 6.f) * v + 0.5, 0.0), 1.0); }},
        {Activation::sigmoid(), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
        {Activation::leaky_relu(0.1f), [](double v) { return v < 0 ? double(0.1f) * v : v; }},
        {Activation::tanh(), [](double v) { return std::tanh(v); }},
    };
    for (const auto& c : cases) {
      conv2d(p, x.data(), w.data(), bias.data(), fused.data(), c.act);
      for (size_t i = 0; i < plain.size(); ++i) {
        const double want = c.f(plain[i]);
        ASSERT_NEAR(fused[i], want, 1e-6 * std::max(1.0, std::fabs(want)))
            << "activation " << static_cast<int>(c.act.kind) << " groups " << groups << " at " << i;
      }
    }
  }
}

TEST(ConvKernel, ResultsDoNotDependOnThreadCount) {
  // Every path partitions its work by shape only (planes; blocks of output
  // pixels, each one serial sgemm), so 1 and 2 threads agree bit for bit.
  const int before = linalg::threads();
  for (int64_t groups : {1, 2, 16}) {
    Conv2dParams p;
    p.c_in = 16, p.c_out = 16, p.h = 24, p.w = 40, p.kh = p.kw = 3, p.groups = groups;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
    const auto x = random_values(p.c_in * p.h * p.w, 41);
    const auto w = random_values(p.c_out * (p.c_in / groups) * 9, 42);
    std::vector<float> y1(static_cast<size_t>(p.c_out * p.h * p.w)), y2(y1.size());
    linalg::set_threads(1);
    conv2d(p, x.data(), w.data(), nullptr, y1.data(), Activation::hard_swish());
    linalg::set_threads(2);
    conv2d(p, x.data(), w.data(), nullptr, y2.data(), Activation::hard_swish());
    EXPECT_EQ(y1, y2) << "groups " << groups;
  }
  // The pointwise path too (24·40 = 960 pixels: 4 blocks of 240).
  Conv2dParams q;
  q.c_in = 32, q.c_out = 24, q.h = 24, q.w = 40;
  const auto x = random_values(q.c_in * q.h * q.w, 43), w = random_values(q.c_out * q.c_in, 44);
  std::vector<float> y1(static_cast<size_t>(q.c_out * q.h * q.w)), y2(y1.size());
  linalg::set_threads(1);
  conv2d(q, x.data(), w.data(), nullptr, y1.data());
  linalg::set_threads(2);
  conv2d(q, x.data(), w.data(), nullptr, y2.data());
  EXPECT_EQ(y1, y2) << "pointwise";
  linalg::set_threads(before);
}

TEST(ConvKernel, RejectsInvalidParameters) {
  Conv2dParams p;
  p.c_in = 3, p.c_out = 4, p.h = 5, p.w = 5, p.kh = p.kw = 3, p.groups = 2;
  std::vector<float> buf(1000);
  EXPECT_THROW(conv2d(p, buf.data(), buf.data(), nullptr, buf.data()), Error);  // 3 % 2 != 0
  p.groups = 1;
  p.kh = 7;  // kernel taller than the unpadded input
  try {
    conv2d(p, buf.data(), buf.data(), nullptr, buf.data());
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  p.kh = 3;
  p.stride_w = 0;
  EXPECT_THROW(conv2d(p, buf.data(), buf.data(), nullptr, buf.data()), Error);
  p.stride_w = 1;
  p.pad_left = -1;
  EXPECT_THROW(conv2d(p, buf.data(), buf.data(), nullptr, buf.data()), Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
