// LSTM: two hand-computed single steps, then forward / reverse /
// bidirectional runs with biases and initial states against the ONNX
// equations evaluated in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/lstm.h"

namespace tailor::runtime::kernels {
namespace {

using testing::random_values;

TEST(LstmKernel, HandComputedSteps) {
  // H = I = 1, one step. All weights 0: every gate pre-activation is 0, so
  // i = o = f = σ(0) = 0.5 and c̃ = tanh(0) = 0. With C0 = 2:
  // C = 0.5·2 + 0.5·0 = 1, H = 0.5·tanh(1) = 0.38079707797788244.
  LstmParams p{1, 1, 1, 1, LstmDirection::forward};
  const float x = 1, c0 = 2;
  std::vector<float> w(4, 0.f), r(4, 0.f);
  float h = 0, c = 0, y = 0;
  lstm(p, &x, w.data(), r.data(), nullptr, nullptr, &c0, &y, &h, &c);
  EXPECT_NEAR(c, 1.f, 1e-7);
  EXPECT_NEAR(h, 0.38079707797788244, 1e-7);
  EXPECT_EQ(y, h);
  // Gate order i, o, f, c: W = [0, 0, 0, 1] feeds x = 1 only to the cell
  // candidate: c̃ = tanh(1); C0 = 0 → C = 0.5·tanh(1) = 0.3807970779778824,
  // H = 0.5·tanh(C) = 0.18169974219452625.
  w = {0, 0, 0, 1};
  lstm(p, &x, w.data(), r.data(), nullptr, nullptr, nullptr, nullptr, &h, &c);
  EXPECT_NEAR(c, 0.3807970779778824, 1e-7);
  EXPECT_NEAR(h, 0.18169974219452625, 1e-7);
}

double sig(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

// ONNX LSTM equations in double (gates i, o, f, c; Wb + Rb added to each).
void reference(const LstmParams& p, const std::vector<float>& x, const std::vector<float>& w,
               const std::vector<float>& r, const std::vector<float>& b,
               const std::vector<float>& h0, const std::vector<float>& c0, std::vector<double>& y,
               std::vector<double>& yh, std::vector<double>& yc) {
  const int64_t H = p.hidden_size, I = p.input_size, B = p.batch, T = p.seq_len;
  const int64_t D = p.num_directions();
  y.assign(T * D * B * H, 0);
  yh.assign(D * B * H, 0);
  yc.assign(D * B * H, 0);
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = p.direction == LstmDirection::reverse || d == 1;
    for (int64_t bi = 0; bi < B; ++bi) {
      std::vector<double> h(H), c(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0[(d * B + bi) * H + j];
        c[j] = c0[(d * B + bi) * H + j];
      }
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = rev ? T - 1 - s : s;
        std::vector<double> g(4 * H);
        for (int64_t q = 0; q < 4 * H; ++q) {
          double v = double(b[d * 8 * H + q]) + b[d * 8 * H + 4 * H + q];
          for (int64_t k = 0; k < I; ++k)
            v += double(x[(t * B + bi) * I + k]) * w[(d * 4 * H + q) * I + k];
          for (int64_t k = 0; k < H; ++k) v += h[k] * r[(d * 4 * H + q) * H + k];
          g[q] = v;
        }
        for (int64_t j = 0; j < H; ++j) {
          const double it = sig(g[j]), ot = sig(g[H + j]), ft = sig(g[2 * H + j]),
                       ct = std::tanh(g[3 * H + j]);
          c[j] = ft * c[j] + it * ct;
          h[j] = ot * std::tanh(c[j]);
          y[((t * D + d) * B + bi) * H + j] = h[j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[(d * B + bi) * H + j] = h[j];
        yc[(d * B + bi) * H + j] = c[j];
      }
    }
  }
}

TEST(LstmKernel, MatchesEquationsAllDirections) {
  for (LstmDirection dir :
       {LstmDirection::forward, LstmDirection::reverse, LstmDirection::bidirectional}) {
    LstmParams p{7, 2, 5, 6, dir};
    const int64_t D = p.num_directions(), H = 6;
    const auto x = random_values(7 * 2 * 5, 1), w = random_values(D * 4 * H * 5, 2),
               r = random_values(D * 4 * H * H, 3), b = random_values(D * 8 * H, 4),
               h0 = random_values(D * 2 * H, 5), c0 = random_values(D * 2 * H, 6);
    std::vector<double> y, yh, yc;
    reference(p, x, w, r, b, h0, c0, y, yh, yc);
    std::vector<float> gy(y.size()), gh(yh.size()), gc(yc.size());
    std::vector<float> scratch(static_cast<size_t>(lstm_scratch_size(p)));
    lstm(p, x.data(), w.data(), r.data(), b.data(), h0.data(), c0.data(), gy.data(), gh.data(),
         gc.data(), scratch.data());
    // Values are O(1); per step ≤ 12 products in f32 plus ~2-ulp σ/tanh,
    // compounded over 7 steps through contracting gates: 1e-5 absolute.
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(gy[i], y[i], 1e-5) << "Y " << i;
    for (size_t i = 0; i < yh.size(); ++i) ASSERT_NEAR(gh[i], yh[i], 1e-5) << "Y_h " << i;
    for (size_t i = 0; i < yc.size(); ++i) ASSERT_NEAR(gc[i], yc[i], 1e-5) << "Y_c " << i;
  }
}

TEST(LstmKernel, RejectsEmptySizes) {
  LstmParams p{0, 1, 1, 1, LstmDirection::forward};
  float v = 0;
  EXPECT_THROW(lstm(p, &v, &v, &v, nullptr, nullptr, nullptr, &v, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
