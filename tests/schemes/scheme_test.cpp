// One test walks every scheme of the registry through the same checks (the
// ggml habit): bytes equal the stored factors and DESIGN.md's formula, decode
// has the weight's shape, matmul equals X·decode()ᵀ without forming Ŵ (and
// matmul_into gives matmul's bits), zero weights stay zero, encoding is
// deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace tailor::schemes {
namespace {

Tensor random_tensor(Shape shape, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(std::move(shape), v);
}

// ‖Y − X·Ŵᵀ‖ / ‖X·Ŵᵀ‖ with the reference product in double.
double matmul_gap(const Encoded& e, const Tensor& x) {
  const std::vector<float> w = e.decode().to_f32_vector();
  const std::vector<float> xv = x.to_f32_vector();
  const std::vector<float> y = e.matmul(x).to_f32_vector();
  const int64_t batch = x.dim(0), in = e.in(), out = e.out();
  double num = 0, den = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t o = 0; o < out; ++o) {
      double ref = 0;
      for (int64_t j = 0; j < in; ++j)
        ref += static_cast<double>(xv[static_cast<size_t>(b * in + j)]) *
               w[static_cast<size_t>(o * in + j)];
      const double d = y[static_cast<size_t>(b * out + o)] - ref;
      num += d * d;
      den += ref * ref;
    }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Shapes with odd `in`, `in` below every group size, a single row or column,
// squares n = m² (for monarch), a conv kernel [out, in, kh, kw], and a few
// drawn at random (seeded) with out in [1, 48], in in [1, 300].
const std::vector<Shape> kShapes = [] {
  std::vector<Shape> s{{7, 13},  {16, 16}, {24, 40}, {1, 1},      {5, 1},
                       {3, 130}, {81, 81}, {33, 64}, {8, 3, 3, 3}};
  Rng rng(2024);
  for (int i = 0; i < 4; ++i)
    s.push_back(
        {1 + static_cast<int64_t>(rng.below(48)), 1 + static_cast<int64_t>(rng.below(300))});
  return s;
}();

TEST(Schemes, ApplicabilityPerShape) {
  const std::vector<int64_t> ranks{1, 2};
  // dense, int8, int4, int3, int4-g32/64/128, ternary, sparse-2:4, lowrank ×2,
  // monarch (square n = m² only), tucker, tt; then 6 -mse forms (no -gptq
  // without a Gram), lowrank-q{8,4} ×2 ranks (R < min side) and
  // int{4,3}+r8[-q8] (8 < min side only for 16×16).
  EXPECT_EQ(applicable_schemes({16, 16}, ranks).size(), 14u + 6 + 4 + 4);
  EXPECT_EQ(applicable_schemes({7, 13}, ranks).size(), 13u + 6 + 4);
  EXPECT_EQ(applicable_schemes({1, 1}, ranks).size(), 13u + 6);  // rank 2 > min side; monarch m = 1
  EXPECT_EQ(applicable_schemes({5}, ranks).size(), 0u);
  // q8_0 and q4_0 only where rows are whole blocks of 32 (none of the above).
  EXPECT_EQ(applicable_schemes({3, 64}, ranks).size(), 13u + 6 + 4 + 2);
  EXPECT_EQ(all_schemes().size(), 18u);  // and int8-a8, applicable only when named
  EXPECT_EQ(default_ranks({4096, 4096}),
            (std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(default_ranks({64, 64}), (std::vector<int64_t>{8, 16}));
}

TEST(Schemes, EveryLabelParsesBackToItself) {
  for (const Shape& shape : kShapes)
    for (const Scheme& s : applicable_schemes(shape, std::vector<int64_t>{1, 2})) {
      const std::string label = s.label();
      EXPECT_EQ(parse_scheme(label).label(), label);
      EXPECT_EQ(parse_scheme(label).kind(), s.kind());
    }
  EXPECT_THROW(parse_scheme("int5"), Error);
  EXPECT_THROW(parse_scheme("int4-g48"), Error);
  EXPECT_THROW(parse_scheme("lowrank-r0"), Error);
  EXPECT_THROW(parse_scheme("lowrank-r"), Error);
  EXPECT_THROW(parse_scheme("lowrank-r8x"), Error);
}

// Every label a pattern stands for: {a,b} alternatives (nested allowed), an
// optional [x], and the message's {G} and {R} as 32/64/128 and 8.
std::vector<std::string> expand_pattern(const std::string& s) {
  for (auto [name, values] :
       {std::pair{std::string("{G}"), std::vector<std::string>{"32", "64", "128"}},
        std::pair{std::string("{R}"), std::vector<std::string>{"8"}}})
    if (const size_t at = s.find(name); at != std::string::npos) {
      std::vector<std::string> out;
      for (const std::string& v : values)
        for (std::string e : expand_pattern(s.substr(0, at) + v + s.substr(at + name.size())))
          out.push_back(e);
      return out;
    }
  const size_t open = s.find_first_of("{[");
  if (open == std::string::npos) return {s};
  const char close = s[open] == '{' ? '}' : ']';
  std::vector<std::string> parts(1);
  size_t i = open + 1;
  for (int depth = 0; depth > 0 || s[i] != close; ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}') --depth;
    if (depth == 0 && s[i] == ',')
      parts.emplace_back();
    else
      parts.back() += s[i];
  }
  if (close == ']') parts = {"", parts[0]};
  std::vector<std::string> out;
  for (const std::string& part : parts)
    for (std::string e : expand_pattern(s.substr(0, open) + part + s.substr(i + 1)))
      out.push_back(e);
  return out;
}

TEST(Schemes, EveryLabelTheUnknownLabelMessageOffersParses) {
  std::string message;
  try {
    parse_scheme("int8-g32-mse");  // once listed by the message, never a scheme
  } catch (const Error& e) {
    message = e.what();
  }
  const std::string known = "known: ";
  ASSERT_NE(message.find(known), std::string::npos) << message;
  std::string list = message.substr(message.find(known) + known.size());
  list = list.substr(0, list.find(" ("));  // the note on G and R
  // Split at the commas outside braces.
  std::vector<std::string> patterns(1);
  int depth = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '{') ++depth;
    if (list[i] == '}') --depth;
    if (depth == 0 && list.compare(i, 2, ", ") == 0) {
      patterns.emplace_back();
      ++i;
    } else {
      patterns.back() += list[i];
    }
  }
  size_t labels = 0;
  for (const std::string& pattern : patterns)
    for (const std::string& label : expand_pattern(pattern)) {
      EXPECT_NO_THROW(parse_scheme(label)) << label << " (from " << pattern << ")";
      ++labels;
    }
  EXPECT_GE(labels, 40u) << list;
}

TEST(Schemes, EverySchemeThroughTheSameChecks) {
  uint64_t seed = 100;
  for (const Shape& shape : kShapes) {
    const Tensor w = random_tensor(shape, ++seed);
    const int64_t out = shape[0], in = w.numel() / out;
    for (const Scheme& s : applicable_schemes(shape, std::vector<int64_t>{1, 2})) {
      SCOPED_TRACE(s.label() + " on " + shape_to_string(shape));
      const auto e = s.encode(w);
      ASSERT_EQ(e->out(), out);
      ASSERT_EQ(e->in(), in);
      EXPECT_EQ(e->label(), s.label());

      // Bytes: the stored factors, every one, and the formula from the shape alone.
      uint64_t sum = 0;
      for (const Factor& f : e->factors()) sum += f.tensor.nbytes();
      EXPECT_EQ(e->bytes(), sum);
      EXPECT_EQ(e->bytes(), s.predicted_bytes(shape));

      const Tensor wh = e->decode();
      EXPECT_EQ(wh.shape(), (Shape{out, in}));
      const double err = rel_error(w, *e);
      EXPECT_TRUE(std::isfinite(err));
      EXPECT_LE(err, 1.0 + 1e-6);

      // int8-a8 also rounds X to 255 levels per row (|error| ≤ max|x|/254 an
      // element, ~0.5% of Y on normal data; its exact definition is tested in
      // quantizers_test.cpp and gemm_kernels_test.cpp); the others only round in f32.
      const double tol = s.kind() == SchemeKind::int8_a8 ? 2e-2 : 1e-5;
      for (int64_t batch : {1, 5, 17}) {
        const Tensor x = random_tensor({batch, in}, ++seed);
        EXPECT_LT(matmul_gap(*e, x), tol) << "batch " << batch;
        EXPECT_EQ(e->matmul(x).shape(), (Shape{batch, out}));
        // matmul_into: the same bits in caller memory, every element written
        // (the buffer starts as NaN).
        std::vector<float> y(static_cast<size_t>(batch * out), std::nanf(""));
        matmul_into(*e, x.data<float>(), batch, y.data());
        EXPECT_EQ(y, e->matmul(x).to_f32_vector()) << "batch " << batch;
        EXPECT_GT(e->macs(batch), 0);
        EXPECT_EQ(e->macs(batch), batch * e->macs(1));
      }
      EXPECT_THROW(e->matmul(random_tensor({2, in + 1}, 1)), Error);

      // Deterministic: the same weight gives the same stored bytes.
      const auto again = s.encode(w);
      ASSERT_EQ(again->factors().size(), e->factors().size());
      for (size_t i = 0; i < e->factors().size(); ++i) {
        const Tensor& a = e->factors()[i].tensor;
        const Tensor& b = again->factors()[i].tensor;
        EXPECT_EQ(e->factors()[i].name, again->factors()[i].name);
        EXPECT_EQ(a.shape(), b.shape());
        EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
      }
    }
  }
}

TEST(Schemes, ZeroWeightsStayZero) {
  for (const Shape& shape : kShapes) {
    const Tensor w = Tensor::zeros(DType::f32, shape);
    for (const Scheme& s : applicable_schemes(shape, std::vector<int64_t>{1})) {
      SCOPED_TRACE(s.label() + " on " + shape_to_string(shape));
      const auto e = s.encode(w);
      for (float v : e->decode().to_f32_vector()) ASSERT_EQ(v, 0.0f);
      EXPECT_EQ(rel_error(w, *e), 0.0);
      const Tensor x = random_tensor({2, e->in()}, 5);
      for (float v : e->matmul(x).to_f32_vector()) ASSERT_EQ(v, 0.0f);
    }
  }
}

TEST(Schemes, QuantizerBytesOn4096Square) {
  const Shape s{4096, 4096};
  EXPECT_EQ(parse_scheme("int4").predicted_bytes(s), 8'388'608u + 8'192u);
  EXPECT_EQ(parse_scheme("int8").predicted_bytes(s), 16'777'216u + 8'192u);
  EXPECT_EQ(parse_scheme("int3").predicted_bytes(s), 6'291'456u + 8'192u);
  EXPECT_EQ(parse_scheme("int4-g128").predicted_bytes(s), 8'388'608u + 2u * 4096 * 32);
  EXPECT_EQ(parse_scheme("ternary").predicted_bytes(s), 4'194'304u + 8'192u);
  EXPECT_EQ(parse_scheme("sparse-2:4").predicted_bytes(s), 4u * 8'388'608 + 2'097'152u);
  EXPECT_EQ(parse_scheme("dense").predicted_bytes(s), 67'108'864u);
  // And the encoder's stored tensors agree for int4 (a zero weight encodes fast).
  const auto e = parse_scheme("int4").encode(Tensor::zeros(DType::f32, s));
  EXPECT_EQ(e->bytes(), 8'388'608u + 8'192u);
  EXPECT_EQ(e->factor("q").nbytes(), 8'388'608u);
  EXPECT_EQ(e->factor("scale").nbytes(), 8'192u);
}

TEST(Schemes, RejectsBadWeights) {
  EXPECT_THROW(parse_scheme("int8").encode(Tensor::zeros(DType::f32, {5})), Error);
  EXPECT_THROW(parse_scheme("int8").encode(Tensor::zeros(DType::f32, {0, 5})), Error);
  EXPECT_THROW(parse_scheme("int8").encode(Tensor::zeros(DType::i32, {2, 5})), Error);
}

}  // namespace
}  // namespace tailor::schemes
