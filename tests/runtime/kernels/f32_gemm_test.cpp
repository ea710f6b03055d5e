// f32_gemm_openblas (alone and split in fixed blocks by gemm_blocked) against
// f32_gemm_ref, every transpose combination, odd sizes, leading dimensions
// wider than the rows, alpha and beta, and beta = 0 with a NaN-filled C (not
// read, BLAS convention). Tolerance: the reference sums in double (error
// ≤ ε relative after its one rounding); an f32 sum of K products in any
// order is within γ_K ≈ K·ε of Σ|a||b| (Higham, "Accuracy and Stability of
// Numerical Algorithms", §3.1), plus the roundings of alpha·, beta·C and
// the final add: tol = (K + 3)·ε·(|alpha|·Σ_l |a_il||b_lj| + |beta·c_ij|).
#include <cmath>
#include <limits>

#include "runtime/kernels/gemm_partition.h"
#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

class F32Gemm : public KernelVsRef {
 protected:
  void check(const GemmCase& c, bool blocked) {
    const int64_t pad = 3;  // leading dimensions wider than the stored rows
    const int64_t ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;
    const int64_t br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
    const int64_t lda = ac + pad, ldb = bc + pad, ldc = c.n + pad;
    const auto a = uniform(ar * lda, 11 + c.m), b = uniform(br * ldb, 12 + c.n);
    std::vector<float> c0 = uniform(c.m * ldc, 13 + c.k);
    if (c.beta == 0.f) std::fill(c0.begin(), c0.end(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> want = c0, got = c0;
    ref().gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
               want.data(), ldc);
    if (blocked) {
      detail::gemm_blocked(opt().gemm, c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(),
                           ldb, c.beta, got.data(), ldc);
    } else {
      opt().gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                 got.data(), ldc);
    }
    std::vector<double> tol(want.size(), 0.0);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double mag = 0.0;
        for (int64_t l = 0; l < c.k; ++l) {
          const float av = c.ta ? a[l * lda + i] : a[i * lda + l];
          const float bv = c.tb ? b[j * ldb + l] : b[l * ldb + j];
          mag += std::fabs(static_cast<double>(av) * bv);
        }
        const double cterm = c.beta == 0.f ? 0.0 : std::fabs(c.beta * c0[i * ldc + j]);
        tol[i * ldc + j] = (c.k + 3) * kEps * (std::fabs(c.alpha) * mag + cterm);
      }
    }
    // Padding columns of C are never written: they keep c0 in both.
    expect_within(got, want, tol,
                  "gemm m" + std::to_string(c.m) + " n" + std::to_string(c.n) + " k" +
                      std::to_string(c.k) + (c.ta ? " Aᵀ" : "") + (c.tb ? " Bᵀ" : "") +
                      (blocked ? " blocked" : ""));
  }
};

const GemmCase kCases[] = {
    {1, 1, 1, false, false, 1.f, 0.f},      {7, 13, 5, false, false, 1.f, 0.f},
    {7, 13, 5, true, false, 1.f, 0.f},      {7, 13, 5, false, true, 1.f, 0.f},
    {7, 13, 5, true, true, 1.f, 0.f},       {33, 17, 65, false, true, 0.5f, 1.f},
    {130, 9, 31, true, false, -2.f, 0.25f}, {5, 300, 129, false, false, 1.f, 1.f},
    {129, 600, 17, false, true, 1.f, 0.f},  {3, 1030, 7, true, true, 1.5f, -1.f},
    {16, 16, 0, false, false, 1.f, 0.5f},
};

TEST_F(F32Gemm, OpenblasMatchesReference) {
  for (const GemmCase& c : kCases) check(c, false);
}

TEST_F(F32Gemm, BlockedOpenblasMatchesReference) {
  // n = 600 and 1030 split by columns, m = 130 and 129 by rows (gemm_partition.h).
  for (const GemmCase& c : kCases) check(c, true);
}

TEST_F(F32Gemm, ReferenceByHand) {
  // [[1, 2], [3, 4]]·[[5, 6], [7, 8]] = [[19, 22], [43, 50]]; alpha 2, beta 1 on C = 1.
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c = {1, 1, 1, 1};
  f32_gemm_ref(false, false, 2, 2, 2, 2.f, a.data(), 2, b.data(), 2, 1.f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{39, 45, 87, 101}));
  // Aᵀ·B with A stored [[1, 2], [3, 4]]: [[1, 3], [2, 4]]·B = [[26, 30], [38, 44]].
  f32_gemm_ref(true, false, 2, 2, 2, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{26, 30, 38, 44}));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
