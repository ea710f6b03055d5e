// The decoder ops of src/runtime/ops_decoder.cpp against their definitions
// computed here in double: ai.tailor Attention, softmax(Q·Kᵀ·s + mask)·V,
// GroupQueryAttention (RoPE, cache append, grouped heads) and
// RMSNormalization (with and without the residual skip); and their refusals.
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

// GroupQueryAttention (graph/fused_ops.h) against its definition in double:
// 4 query heads over 2 KV heads, d = 4, 3 new positions after 2 cached, R a
// random matrix (not only a rotation), the causal mask of the stacked groups;
// and the same node reading whole RoPE tables and building the mask itself.
TEST(GroupQueryAttentionOp, MatchesTheDefinitionInDouble) {
  Rng rng(11);
  const int64_t H = 4, KV = 2, G = H / KV, d = 4, S = 3, P = 2, T = P + S;
  const Tensor q = random({S, H * d}, rng), k = random({S, KV * d}, rng),
               v = random({S, KV * d}, rng), pk = random({1, KV, P, d}, rng),
               pv = random({1, KV, P, d}, rng), cs = random({S, 1, d}, rng),
               sn = random({S, 1, d}, rng), rot = random({d, d}, rng);
  std::vector<float> mask(static_cast<size_t>(G * S * T), 0.0f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = P + i + 1; j < T; ++j)
        mask[static_cast<size_t>((g * S + i) * T + j)] = -std::numeric_limits<float>::infinity();
  const float scale = 0.5f;
  const std::vector<Tensor> out =
      OneOp("GroupQueryAttention",
            {q, k, v, pk, pv, cs, sn, rot, Tensor::from_f32({G * S, T}, mask)},
            {{"num_heads", graph::Attribute::of_int(H)},
             {"kv_num_heads", graph::Attribute::of_int(KV)},
             {"scale", graph::Attribute::of_float(scale)}},
            17, 3, "ai.tailor")
          .run();
  ASSERT_EQ(out[0].shape(), (Shape{S, H * d}));
  ASSERT_EQ(out[1].shape(), (Shape{1, KV, T, d}));
  ASSERT_EQ(out[2].shape(), (Shape{1, KV, T, d}));
  const auto f = [](const Tensor& t) { return t.to_f32_vector(); };
  // rope_tables and causal: whole tables of T + 1 rows holding cs and sn at
  // rows P … T − 1 (other rows random), no mask input: the same outputs, bit
  // for bit.
  {
    std::vector<float> ct = f(random({T + 1, 1, d}, rng)), st = f(random({T + 1, 1, d}, rng));
    const auto C0 = f(cs), S0 = f(sn);
    std::copy(C0.begin(), C0.end(), ct.begin() + P * d);
    std::copy(S0.begin(), S0.end(), st.begin() + P * d);
    const std::vector<Tensor> built = OneOp("GroupQueryAttention",
                                            {q, k, v, pk, pv, Tensor::from_f32({T + 1, 1, d}, ct),
                                             Tensor::from_f32({T + 1, 1, d}, st), rot},
                                            {{"num_heads", graph::Attribute::of_int(H)},
                                             {"kv_num_heads", graph::Attribute::of_int(KV)},
                                             {"scale", graph::Attribute::of_float(scale)},
                                             {"rope_tables", graph::Attribute::of_int(1)},
                                             {"causal", graph::Attribute::of_int(1)}},
                                            17, 3, "ai.tailor")
                                          .run();
    for (size_t o = 0; o < 3; ++o) EXPECT_EQ(f(built[o]), f(out[o])) << "output " << o;
  }
  const auto Q = f(q), K = f(k), V = f(v), PK = f(pk), PV = f(pv), C = f(cs), SN = f(sn),
             R = f(rot), Y = f(out[0]), OK = f(out[1]), OV = f(out[2]);
  // RoPE of row x (d values) at new position i, in double.
  auto rope = [&](const float* x, int64_t i) {
    std::vector<double> y(static_cast<size_t>(d));
    for (int64_t c = 0; c < d; ++c) {
      double turned = 0;
      for (int64_t e = 0; e < d; ++e) turned += double{x[e]} * R[static_cast<size_t>(e * d + c)];
      y[static_cast<size_t>(c)] = x[c] * double{C[static_cast<size_t>(i * d + c)]} +
                                  turned * SN[static_cast<size_t>(i * d + c)];
    }
    return y;
  };
  // keys[kv][j], values[kv][j]: the pasts, then the new positions.
  std::vector<std::vector<std::vector<double>>> keys(KV), values(KV);
  for (int64_t h = 0; h < KV; ++h) {
    for (int64_t j = 0; j < P; ++j) {
      const size_t at = static_cast<size_t>((h * P + j) * d);
      keys[h].emplace_back(PK.begin() + at, PK.begin() + at + d);
      values[h].emplace_back(PV.begin() + at, PV.begin() + at + d);
    }
    for (int64_t i = 0; i < S; ++i) {
      keys[h].push_back(rope(K.data() + i * KV * d + h * d, i));
      const size_t at = static_cast<size_t>(i * KV * d + h * d);
      values[h].emplace_back(V.begin() + at, V.begin() + at + d);
    }
    for (int64_t j = 0; j < T; ++j)
      for (int64_t c = 0; c < d; ++c) {
        const size_t at = static_cast<size_t>((h * T + j) * d + c);
        EXPECT_NEAR(OK[at], keys[h][j][c], 1e-5) << "present key " << h << " " << j;
        EXPECT_EQ(OV[at], static_cast<float>(values[h][j][c])) << "present value " << h;
      }
  }
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const std::vector<double> qi = rope(Q.data() + i * H * d + h * d, i);
      const int64_t kv = h / G;
      std::vector<double> w(static_cast<size_t>(T));
      double best = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= P + i; ++j) {  // the mask: keys up to the query's position
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += qi[c] * keys[kv][j][c];
        w[j] = dot * scale;
        best = std::max(best, w[j]);
      }
      for (int64_t j = 0; j <= P + i; ++j) sum += (w[j] = std::exp(w[j] - best));
      for (int64_t c = 0; c < d; ++c) {
        double y = 0;
        for (int64_t j = 0; j <= P + i; ++j) y += w[j] / sum * values[kv][j][c];
        EXPECT_NEAR(Y[static_cast<size_t>(i * H * d + h * d + c)], y, 1e-5)
            << "head " << h << " row " << i;
      }
    }
}

// A one-position causal step (a decode step) runs without a mask: every key
// is at or before the query. Its outputs equal, bit for bit, those of the
// same node fed an explicit all-zero mask, over pasts of 0, 1, 5 and 12
// positions (the attention kernel's 4-key blocks and its single keys).
TEST(GroupQueryAttentionOp, OnePositionCausalStepEqualsAZeroMask) {
  Rng rng(23);
  const int64_t H = 4, KV = 2, G = H / KV, d = 8;
  for (const int64_t P : {0, 1, 5, 12}) {
    const int64_t T = P + 1;
    const Tensor q = random({1, H * d}, rng), k = random({1, KV * d}, rng),
                 v = random({1, KV * d}, rng), pk = random({1, KV, P, d}, rng),
                 pv = random({1, KV, P, d}, rng), cs = random({1, 1, d}, rng),
                 sn = random({1, 1, d}, rng), rot = random({d, d}, rng);
    const std::vector<std::pair<std::string, graph::Attribute>> heads = {
        {"num_heads", graph::Attribute::of_int(H)},
        {"kv_num_heads", graph::Attribute::of_int(KV)},
        {"scale", graph::Attribute::of_float(0.35f)}};
    auto causal = heads;
    causal.push_back({"causal", graph::Attribute::of_int(1)});
    const std::vector<Tensor> got =
        OneOp("GroupQueryAttention", {q, k, v, pk, pv, cs, sn, rot}, causal, 17, 3, "ai.tailor")
            .run();
    const std::vector<Tensor> want =
        OneOp("GroupQueryAttention",
              {q, k, v, pk, pv, cs, sn, rot,
               Tensor::from_f32({G, T}, std::vector<float>(static_cast<size_t>(G * T), 0.0f))},
              heads, 17, 3, "ai.tailor")
            .run();
    for (size_t o = 0; o < 3; ++o) {
      ASSERT_EQ(got[o].shape(), want[o].shape()) << "output " << o << " past " << P;
      EXPECT_EQ(got[o].to_f32_vector(), want[o].to_f32_vector()) << "output " << o << " past " << P;
    }
  }
}

TEST(GroupQueryAttentionOp, RejectsBadShapesAndHeads) {
  Rng rng(2);
  const int64_t d = 4;
  const Tensor q = random({1, 4 * d}, rng), k = random({1, 2 * d}, rng),
               p = random({1, 2, 0, d}, rng), cs = random({1, 1, d}, rng),
               rot = random({d, d}, rng);
  const std::vector<std::pair<std::string, graph::Attribute>> attrs = {
      {"num_heads", graph::Attribute::of_int(4)}, {"kv_num_heads", graph::Attribute::of_int(2)}};
  testing::expect_error_naming(
      [&] {
        OneOp("GroupQueryAttention", {q, random({1, 3 * d}, rng), k, p, p, cs, cs, rot}, attrs, 17,
              3, "ai.tailor")
            .run();
      },
      "GroupQueryAttention", "are not [1, 8]");
  testing::expect_error_naming(
      [&] {
        OneOp("GroupQueryAttention", {q, k, k, p, p, cs, cs, random({d, 2}, rng)}, attrs, 17, 3,
              "ai.tailor")
            .run();
      },
      "GroupQueryAttention", "R [4, 2]");
  testing::expect_error_naming(
      [&] {
        OneOp("GroupQueryAttention", {q, k, k, p, p, cs, cs, rot},
              {{"num_heads", graph::Attribute::of_int(3)},
               {"kv_num_heads", graph::Attribute::of_int(2)}},
              17, 3, "ai.tailor")
            .run();
      },
      "GroupQueryAttention", "multiple of kv_num_heads");
  // Whole RoPE tables shorter than past + new positions (here 0 rows for 1).
  testing::expect_error_naming(
      [&] {
        OneOp("GroupQueryAttention",
              {q, k, k, p, p, random({0, 1, d}, rng), random({0, 1, d}, rng), rot},
              {{"num_heads", graph::Attribute::of_int(4)},
               {"kv_num_heads", graph::Attribute::of_int(2)},
               {"rope_tables", graph::Attribute::of_int(1)}},
              17, 3, "ai.tailor")
            .run();
      },
      "GroupQueryAttention", "are not [≥ 1, 1, 4]");
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

TEST(RmsNormalizationOp, WithSkipNormalisesTheSumAndGivesItBack) {
  Rng rng(5);
  const Tensor a = random({3, 6}, rng), b = random({3, 6}, rng), g = random({6}, rng);
  const float eps = 1e-5f;
  const auto out = OneOp("RMSNormalization", {a, g, b},
                         {{"epsilon", graph::Attribute::of_float(eps)}}, 17, 2, "ai.tailor")
                       .run();
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape(), a.shape());
  ASSERT_EQ(out[1].shape(), a.shape());
  const float *ap = a.data<float>(), *bp = b.data<float>(), *gp = g.data<float>();
  for (int64_t r = 0; r < 3; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < 6; ++j) {
      const double x = double(ap[r * 6 + j]) + bp[r * 6 + j];
      ss += x * x;
    }
    const double inv = 1.0 / std::sqrt(ss / 6 + eps);
    for (int64_t j = 0; j < 6; ++j) {
      const size_t k = static_cast<size_t>(r * 6 + j);
      EXPECT_EQ(out[1].data<float>()[k], ap[k] + bp[k]) << r << " " << j;  // f32 sum, exact
      EXPECT_NEAR(out[0].data<float>()[k], (double(ap[k]) + bp[k]) * inv * gp[j], 1e-5)
          << r << " " << j;
    }
  }
  testing::expect_error_naming(
      [&] {
        OneOp("RMSNormalization", {a, g, random({1, 6}, rng)}, {}, 17, 2, "ai.tailor").run();
      },
      "RMSNormalization", "is not X's shape");
  testing::expect_error_naming(
      [&] {
        OneOp("RMSNormalization", {a, g}, {}, 17, 2, "ai.tailor").run();
      },
      "RMSNormalization", "needs the skip input");
}

}  // namespace
}  // namespace tailor::runtime
