// The decoder ops of src/runtime/ops_decoder.cpp against their definitions
// computed here in double: ai.tailor Attention, softmax(Q·Kᵀ·s + mask)·V, and
// RMSNormalization; and their refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/op_test_util.h"
#include "tailor/core/rng.h"
#include "test_util.h"

namespace tailor::runtime {
namespace {

using testing::OneOp;

Tensor random(const Shape& s, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(s, v);
}

TEST(AttentionOp, MatchesTheDefinitionInDouble) {
  Rng rng(7);
  const int64_t b = 1, h = 3, r = 4, t = 6, d = 5;
  const Tensor q = random({b, h, r, d}, rng), k = random({b, h, t, d}, rng),
               v = random({b, h, t, d}, rng);
  // Causal over the last r of t positions, one row fully open.
  std::vector<float> mask(static_cast<size_t>(r * t), 0.0f);
  for (int64_t i = 1; i < r; ++i)
    for (int64_t j = t - r + i + 1; j < t; ++j)
      mask[static_cast<size_t>(i * t + j)] = -std::numeric_limits<float>::infinity();
  const float scale = 0.37f;
  const Tensor y = OneOp("Attention", {q, k, v, Tensor::from_f32({r, t}, mask)},
                         {{"scale", graph::Attribute::of_float(scale)}}, 17, 1, "ai.tailor")
                       .run1();
  ASSERT_EQ(y.shape(), (Shape{b, h, r, d}));
  const float *qp = q.data<float>(), *kp = k.data<float>(), *vp = v.data<float>();
  const float* yp = y.data<float>();
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < r; ++i) {
      std::vector<double> p(static_cast<size_t>(t));
      double z = 0, best = -INFINITY;
      for (int64_t j = 0; j < t; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c)
          s += double(qp[(hh * r + i) * d + c]) * kp[(hh * t + j) * d + c];
        p[static_cast<size_t>(j)] = s * scale + mask[static_cast<size_t>(i * t + j)];
        best = std::max(best, p[static_cast<size_t>(j)]);
      }
      for (double& x : p) z += (x = std::exp(x - best));
      for (int64_t c = 0; c < d; ++c) {
        double want = 0;
        for (int64_t j = 0; j < t; ++j)
          want += p[static_cast<size_t>(j)] / z * vp[(hh * t + j) * d + c];
        EXPECT_NEAR(yp[(hh * r + i) * d + c], want, 1e-5) << hh << " " << i << " " << c;
      }
    }
  // Without a mask every key is read: row 0 (open under the mask too) is
  // unchanged, row 1 (keys 4 and 5 masked above) changes.
  const Tensor open = OneOp("Attention", {q, k, v}, {{"scale", graph::Attribute::of_float(scale)}},
                            17, 1, "ai.tailor")
                          .run1();
  EXPECT_EQ(open.data<float>()[0], yp[0]);
  EXPECT_NE(open.data<float>()[1 * d], yp[1 * d]);
}

TEST(AttentionOp, RejectsMismatchedShapes) {
  Rng rng(1);
  const Tensor q = random({1, 2, 3, 4}, rng), k = random({1, 2, 5, 4}, rng);
  testing::expect_error_naming(
      [&] {
        OneOp("Attention", {q, k, random({1, 2, 5, 3}, rng)}, {}, 17, 1, "ai.tailor").run();
      },
      "Attention", "do not match");
  testing::expect_error_naming(
      [&] {
        OneOp("Attention", {q, k, k, random({3, 4}, rng)}, {}, 17, 1, "ai.tailor").run();
      },
      "Attention", "mask");
}

TEST(RmsNormalizationOp, MatchesTheDefinitionInDouble) {
  Rng rng(3);
  const Tensor x = random({2, 3, 7}, rng), g = random({7}, rng);
  const float eps = 1e-3f;
  const Tensor y = OneOp("RMSNormalization", {x, g}, {{"epsilon", graph::Attribute::of_float(eps)}},
                         17, 1, "ai.tailor")
                       .run1();
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t r = 0; r < 6; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < 7; ++j)
      ss += double(x.data<float>()[r * 7 + j]) * x.data<float>()[r * 7 + j];
    const double inv = 1.0 / std::sqrt(ss / 7 + eps);
    for (int64_t j = 0; j < 7; ++j)
      EXPECT_NEAR(y.data<float>()[r * 7 + j], x.data<float>()[r * 7 + j] * inv * g.data<float>()[j],
                  1e-5)
          << r << " " << j;
  }
  testing::expect_error_naming(
      [&] {
        OneOp("RMSNormalization", {x, random({6}, rng)}, {}, 17, 1, "ai.tailor").run();
      },
      "RMSNormalization", "scale has 6 elements");
}

}  // namespace
}  // namespace tailor::runtime
