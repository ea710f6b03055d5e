// Exact recovery and shape bookkeeping of the SVD-based schemes: low-rank of an
// exactly rank-R matrix, Monarch of an exact Monarch matrix, Tucker and TT at
// full ranks and TT of an exact tensor train. Inputs are built here from their
// definitions (DESIGN.md), independently of the encoders.
#include <gtest/gtest.h>

#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/svd.h"
#include "tailor/schemes/registry.h"
#include "tailor/schemes/tucker.h"

namespace tailor::schemes {
namespace {

std::vector<float> normals(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

Tensor random_weight(Shape shape, uint64_t seed) {
  const int64_t n = shape_numel(shape);
  return Tensor::from_f32(std::move(shape), normals(n, seed));
}

// A·B for A [m, r], B [r, n] in double, as an f32 tensor.
Tensor product_of(int64_t m, int64_t r, int64_t n, uint64_t seed) {
  const std::vector<float> a = normals(m * r, seed), b = normals(r * n, seed + 1);
  std::vector<float> w(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < r; ++k) s += static_cast<double>(a[i * r + k]) * b[k * n + j];
      w[static_cast<size_t>(i * n + j)] = static_cast<float>(s);
    }
  return Tensor::from_f32({m, n}, w);
}

TEST(LowRank, ExactOnExactlyRankRMatrices) {
  // 300×280 at rank 12 takes the randomized path, 40×50 at rank 5 exact gesdd.
  for (auto [m, n, r] : {std::tuple<int64_t, int64_t, int64_t>{300, 280, 12}, {40, 50, 5}}) {
    const Tensor w = product_of(m, r, n, 7);
    const auto e = parse_scheme("lowrank-r" + std::to_string(r)).encode(w);
    EXPECT_LT(rel_error(w, *e), 1e-5) << m << "x" << n;
    EXPECT_EQ(e->factor("A").shape(), (Shape{m, r}));
    EXPECT_EQ(e->factor("B").shape(), (Shape{r, n}));
    EXPECT_EQ(e->macs(3), 3 * r * (m + n));
  }
  EXPECT_FALSE(parse_scheme("lowrank-r51").applicable({40, 50}));
}

TEST(Monarch, ExactOnAnExactMonarchMatrix) {
  // W[l·m + s, ri·m + j] = L[ri, j, l]·R[l, s, ri] with random L, R (m = 5, n = 25).
  const int64_t m = 5, n = 25;
  const std::vector<float> l = normals(m * m * m, 3), r = normals(m * m * m, 4);
  std::vector<float> w(static_cast<size_t>(n * n));
  for (int64_t bl = 0; bl < m; ++bl)
    for (int64_t s = 0; s < m; ++s)
      for (int64_t ri = 0; ri < m; ++ri)
        for (int64_t j = 0; j < m; ++j)
          w[static_cast<size_t>((bl * m + s) * n + ri * m + j)] =
              l[static_cast<size_t>((ri * m + j) * m + bl)] *
              r[static_cast<size_t>((bl * m + s) * m + ri)];
  const Tensor wt = Tensor::from_f32({n, n}, w);
  const auto e = parse_scheme("monarch").encode(wt);
  EXPECT_LT(rel_error(wt, *e), 1e-5);
  EXPECT_EQ(e->factor("L").shape(), (Shape{m, m, m}));
  EXPECT_EQ(e->bytes(), 8u * 125);
  EXPECT_EQ(e->macs(2), 2 * 2 * 125);
  EXPECT_FALSE(parse_scheme("monarch").applicable({24, 24}));
  EXPECT_FALSE(parse_scheme("monarch").applicable({16, 25}));
}

TEST(Tucker, FullRanksReconstructMatricesAndConvKernels) {
  SchemeParams full;
  full.tucker_rank_fraction = 1.0;
  const Scheme tucker = parse_scheme("tucker", full);
  for (const Shape& shape : {Shape{12, 30}, Shape{6, 4, 3, 3}, Shape{7, 13}}) {
    const Tensor w = random_weight(shape, 11);
    EXPECT_LT(rel_error(w, *tucker.encode(w)), 1e-5) << shape_to_string(shape);
  }
}

TEST(Tucker, ConvKernelsAreTucker2AndMatricesThreeModes) {
  // [64, 32, 3, 3]: modes (64, 32, 9), ranks ceil(0.25·d) = 16, 8, spatial kept:
  // 4·(16·8·9 + 64·16 + 32·8) = 9,728 bytes.
  const Tensor conv = random_weight({64, 32, 3, 3}, 5);
  const auto e = parse_scheme("tucker").encode(conv);
  EXPECT_EQ(e->factor("core").shape(), (Shape{16, 8, 9}));
  EXPECT_EQ(e->factor("U0").shape(), (Shape{64, 16}));
  EXPECT_EQ(e->factor("U1").shape(), (Shape{32, 8}));
  EXPECT_THROW(e->factor("U2"), Error);
  EXPECT_EQ(e->bytes(), 9728u);
  // 4096²: [4096, 64, 64] with ranks 1024, 16, 16:
  // 4·(1024·16·16 + 4096·1024 + 64·16 + 64·16) = 17,833,984 bytes.
  EXPECT_EQ(parse_scheme("tucker").predicted_bytes({4096, 4096}), 17'833'984u);
}

TEST(Tucker, FactorsCutFromTheCallersSvdAreTheEncodersOwn) {
  // A 1×1 kernel [48, 40, 1, 1] unfolds to W [48, 40] in mode 0 and to Wᵀ in
  // mode 1, so U0 = W's leading 12 left and U1 its leading 10 right singular vectors.
  const Tensor conv = random_weight({48, 40, 1, 1}, 9);
  const auto svd_of = [](const Tensor& t, int64_t rows, int64_t cols) {
    return linalg::svd_exact(Eigen::Map<const linalg::Matrix>(t.data<float>(), rows, cols));
  };
  const linalg::Svd svd = svd_of(conv, 48, 40);
  const auto own = parse_scheme("tucker").encode(conv);
  const auto cut = encode_tucker_reusing(conv, SchemeParams{}, svd.u, svd.vt);
  const double e = rel_error(conv, *own);
  EXPECT_GT(e, 0.1);
  EXPECT_NEAR(rel_error(conv, *cut), e, 1e-6 * e);
  EXPECT_EQ(cut->bytes(), own->bytes());
  const float* u1 = cut->factor("U1").data<float>();
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 10; ++j) ASSERT_EQ(u1[i * 10 + j], svd.vt(j, i)) << i << "," << j;
  // Another matrix's V is taken as given (so it is used, not recomputed) and
  // projects W onto a worse subspace.
  const linalg::Svd other = svd_of(random_weight({48, 40}, 10), 48, 40);
  const auto wrong = encode_tucker_reusing(conv, SchemeParams{}, svd.u, other.vt);
  EXPECT_EQ(wrong->factor("U1").data<float>()[0], other.vt(0, 0));
  EXPECT_GT(rel_error(conv, *wrong), e + 0.01);
  // A 3×3 kernel's mode 1 is not Wᵀ: Vᵀ is ignored, U1 is the encoder's own bit
  // for bit (U0 may come from another route to the same vectors, up to sign).
  const Tensor k3 = random_weight({16, 8, 3, 3}, 12);
  const linalg::Svd s3 = svd_of(k3, 16, 72);
  const auto own3 = parse_scheme("tucker").encode(k3);
  const auto cut3 = encode_tucker_reusing(k3, SchemeParams{}, s3.u, s3.vt);
  const Tensor a = own3->factor("U1"), b = cut3->factor("U1");
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  const double e3 = rel_error(k3, *own3);
  EXPECT_NEAR(rel_error(k3, *cut3), e3, 1e-6 * e3);
}

TEST(Tt, FullRanksReconstruct) {
  for (int cores : {1, 2, 3}) {
    SchemeParams full;
    full.tt_max_rank = 0;
    full.tt_cores = cores;
    for (const Shape& shape : {Shape{24, 36}, Shape{7, 13}, Shape{8, 2, 3, 3}}) {
      const Tensor w = random_weight(shape, 17);
      EXPECT_LT(rel_error(w, *parse_scheme("tt", full).encode(w)), 1e-5)
          << shape_to_string(shape) << " with " << cores << " cores";
    }
  }
}

TEST(Tt, ExactOnAnExactTensorTrainAndBytes) {
  // out = 8 = 2·2·2, in = 27 = 3·3·3, bond ranks (1, 2, 2, 1): W from random
  // cores G_k[r, o, i, r'] summed over the bonds.
  const int64_t r1 = 2, r2 = 2;
  const std::vector<float> g1 = normals(1 * 2 * 3 * r1, 1), g2 = normals(r1 * 2 * 3 * r2, 2),
                           g3 = normals(r2 * 2 * 3 * 1, 3);
  std::vector<float> w(8 * 27);
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 27; ++i) {
      const int64_t o1 = o / 4, o2 = o / 2 % 2, o3 = o % 2, i1 = i / 9, i2 = i / 3 % 3, i3 = i % 3;
      double s = 0;
      for (int64_t a = 0; a < r1; ++a)
        for (int64_t b = 0; b < r2; ++b)
          s += static_cast<double>(g1[static_cast<size_t>((o1 * 3 + i1) * r1 + a)]) *
               g2[static_cast<size_t>(((a * 2 + o2) * 3 + i2) * r2 + b)] *
               g3[static_cast<size_t>((b * 2 + o3) * 3 + i3)];
      w[static_cast<size_t>(o * 27 + i)] = static_cast<float>(s);
    }
  SchemeParams p;
  p.tt_max_rank = 2;
  const Tensor wt = Tensor::from_f32({8, 27}, w);
  const auto e = parse_scheme("tt", p).encode(wt);
  EXPECT_LT(rel_error(wt, *e), 1e-5);
  EXPECT_EQ(e->factor("G2").shape(), (Shape{2, 2, 3, 2}));
  EXPECT_EQ(e->bytes(), 4u * (6 * 2 + 2 * 6 * 2 + 2 * 6));
  // 4096² with 3 cores of 16·16 = 256 and the default cap 64:
  // 4·(256·64 + 64·256·64 + 64·256) = 4,325,376 bytes.
  EXPECT_EQ(parse_scheme("tt").predicted_bytes({4096, 4096}), 4'325'376u);
}

}  // namespace
}  // namespace tailor::schemes
