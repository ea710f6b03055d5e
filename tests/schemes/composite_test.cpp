// Composite candidates: quantized low-rank factors (lowrank-q{8,4}-r{R}) and a
// quantized weight plus a low-rank correction of its residual
// (int{4,3}+r{R}[-q8]): stored bytes by their formula, errors against the
// parts they are built from, matmul = X·Ŵᵀ of the stored factors.
#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/schemes/composite.h"
#include "tailor/schemes/registry.h"

namespace tailor::schemes {
namespace {

/// W [out, in] = low-rank signal plus noise: a spectrum a truncation helps with.
Tensor weight(int64_t out, int64_t in, uint64_t seed) {
  Rng r(seed);
  std::vector<float> u(out * 6), v(6 * in), w(out * in);
  for (float& x : u) x = static_cast<float>(r.normal());
  for (float& x : v) x = static_cast<float>(r.normal());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) {
      double s = 0.3 * r.normal();
      for (int k = 0; k < 6; ++k) s += u[o * 6 + k] * v[k * in + j] / (1.0 + k);
      w[o * in + j] = static_cast<float>(s);
    }
  return Tensor::from_f32({out, in}, w);
}

TEST(Composite, BytesAreTheStoredFactorsAndTheirFormula) {
  const Tensor w = weight(40, 72, 1);
  // int4 + r8 (f16): ceil(40·72·4/8) + 2·40 + 2·(40·8 + 8·72) = 1440 + 80 + 1792.
  const auto e = parse_scheme("int4+r8").encode(w);
  EXPECT_EQ(e->bytes(), 1440u + 80 + 1792);
  // int3 + r8-q8: ceil(40·72·3/8) + 80 + (40·8 + 80) + (8·72 + 16).
  EXPECT_EQ(parse_scheme("int3+r8-q8").encode(w)->bytes(), 1080u + 80 + 400 + 592);
  // lowrank-q4-r8: ceil(40·8/2) + 80 + ceil(8·72/2) + 16.
  EXPECT_EQ(parse_scheme("lowrank-q4-r8").encode(w)->bytes(), 160u + 80 + 288 + 16);
  for (const char* label :
       {"int4+r8", "int3+r8-q8", "int4+r16-q8", "lowrank-q8-r8", "lowrank-q4-r16"}) {
    const Scheme s = parse_scheme(label);
    EXPECT_EQ(s.label(), label);
    EXPECT_EQ(s.encode(w)->bytes(), s.predicted_bytes(w.shape())) << label;
    EXPECT_TRUE(composite_parts(*s.encode(w)).has_value());
  }
  EXPECT_FALSE(composite_parts(*parse_scheme("int4").encode(w)).has_value());
  EXPECT_EQ(parse_scheme("int4+r8").encode(w)->factors().size(), 4u);        // q, scale, A, B
  EXPECT_EQ(parse_scheme("lowrank-q8-r8").encode(w)->factors().size(), 4u);  // A.q … B.scale
  EXPECT_THROW(parse_scheme("int5+r8"), Error);
  EXPECT_THROW(parse_scheme("lowrank-q2-r8"), Error);
  EXPECT_FALSE(parse_scheme("int4+r40").applicable({40, 72}));  // R < min(out, in)
}

TEST(Composite, CorrectionLowersTheQuantizerError) {
  const Tensor w = weight(48, 96, 2);
  for (const char* q : {"int4", "int3"}) {
    const double base = rel_error(w, *parse_scheme(std::string(q) + "-mse").encode(w));
    double prev = base;
    for (const char* r : {"+r4", "+r8", "+r16"}) {
      const double e = rel_error(w, *parse_scheme(std::string(q) + r).encode(w));
      EXPECT_LT(e, prev) << q << r;
      prev = e;
      const double e8 = rel_error(w, *parse_scheme(std::string(q) + r + "-q8").encode(w));
      EXPECT_LT(e8, base) << q << r << "-q8";
    }
  }
}

TEST(Composite, QuantizedFactorsStayNearTheirFloatRank) {
  const Tensor w = weight(48, 96, 3);
  for (int r : {4, 8, 16}) {
    const double f = rel_error(w, *parse_scheme("lowrank-r" + std::to_string(r)).encode(w));
    const double q8 = rel_error(w, *parse_scheme("lowrank-q8-r" + std::to_string(r)).encode(w));
    const double q4 = rel_error(w, *parse_scheme("lowrank-q4-r" + std::to_string(r)).encode(w));
    EXPECT_LT(q8, f * 1.02 + 1e-3) << r;
    EXPECT_LT(q4, f * 1.25 + 1e-2) << r;
    EXPECT_GE(q8, f * 0.999) << r;  // never better than the optimum of its rank
  }
}

TEST(Composite, MatmulIsXTimesTheDecodedWeight) {
  const Tensor w = weight(20, 36, 4);
  Rng r(5);
  std::vector<float> xv(3 * 36);
  for (float& v : xv) v = static_cast<float>(r.normal());
  const Tensor x = Tensor::from_f32({3, 36}, xv);
  for (const char* label : {"int4+r4", "int3+r8-q8", "lowrank-q8-r4", "lowrank-q4-r8"}) {
    const auto e = parse_scheme(label).encode(w);
    const std::vector<float> y = e->matmul(x).to_f32_vector(), d = e->decode().to_f32_vector();
    for (int b = 0; b < 3; ++b)
      for (int o = 0; o < 20; ++o) {
        double s = 0;
        for (int j = 0; j < 36; ++j) s += double(xv[b * 36 + j]) * d[o * 36 + j];
        EXPECT_NEAR(y[b * 20 + o], s, 1e-4 * (1 + std::abs(s))) << label;
      }
    const int64_t rank = e->label().find("r8") != std::string::npos ? 8 : 4;
    const bool base = e->label()[0] == 'i';
    EXPECT_EQ(e->macs(3), 3 * ((base ? 20 * 36 : 0) + rank * (20 + 36))) << label;
  }
}

}  // namespace
}  // namespace tailor::schemes
