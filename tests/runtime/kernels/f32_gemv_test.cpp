// f32_gemv_avx2 against f32_gemv_ref, both storage forms of B, sizes around
// the kernel's blocks (8 columns and 8 lanes of k for Bᵀ; 32 and 8 columns
// for B), leading dimensions wider than the rows, alpha and beta, and
// beta = 0 over a NaN-filled y (not read). Tolerance as f32_gemm_test's:
// (K + 3)·ε·(|alpha|·Σ_l |x_l||b_lj| + |beta·y_j|). Then the contract that
// lets gemv_blocked split columns: any split gives the values of the whole
// call bit for bit, and gemv_blocked over 1 or 2 threads gives the one call's.
#include <cmath>
#include <limits>

#include "runtime/kernels/gemm_partition.h"
#include "runtime/kernels/kernel_compare.h"
#include "tailor/linalg/threads.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct GemvCase {
  int64_t n, k;
  bool tb;
  float alpha, beta;
};

/// B holding op(B) [k, n] (stored [n, k] when tb) with leading dimension ldb.
struct Operands {
  int64_t ldb;
  std::vector<float> x, b, y0;
};

Operands operands(const GemvCase& c, uint64_t seed) {
  const int64_t pad = 3;
  const int64_t rows = c.tb ? c.n : c.k, cols = c.tb ? c.k : c.n;
  Operands o{cols + pad, uniform(c.k, seed), uniform(rows * (cols + pad), seed + 1),
             uniform(c.n, seed + 2)};
  if (c.beta == 0.f) std::fill(o.y0.begin(), o.y0.end(), std::numeric_limits<float>::quiet_NaN());
  return o;
}

std::string name(const GemvCase& c) {
  return "gemv n" + std::to_string(c.n) + " k" + std::to_string(c.k) + (c.tb ? " Bᵀ" : " B") +
         " alpha " + std::to_string(c.alpha) + " beta " + std::to_string(c.beta);
}

const GemvCase kCases[] = {
    {1, 1, true, 1.f, 0.f},      {1, 1, false, 1.f, 0.f},    {3, 7, true, 1.f, 0.f},
    {3, 7, false, 1.f, 0.f},     {4, 8, true, 1.f, 0.f},     {5, 9, true, 0.5f, 1.f},
    {7, 16, false, -2.f, 0.25f}, {9, 17, false, 1.f, 1.f},   {33, 65, true, 1.5f, -1.f},
    {40, 31, false, 1.f, 0.f},   {172, 64, true, 1.f, 0.f},  {64, 172, true, 1.f, 0.f},
    {172, 64, false, 1.f, 0.f},  {513, 64, true, 1.f, 0.5f}, {71, 129, false, 2.f, 0.f},
    {16, 0, true, 1.f, 0.5f},    {16, 0, false, 1.f, 0.f},
};

class F32Gemv : public KernelVsRef {};

TEST_F(F32Gemv, Avx2MatchesReference) {
  uint64_t seed = 100;
  for (const GemvCase& c : kCases) {
    const Operands o = operands(c, seed += 3);
    std::vector<float> want = o.y0, got = o.y0;
    ref().gemv(c.tb, c.n, c.k, c.alpha, o.x.data(), o.b.data(), o.ldb, c.beta, want.data());
    opt().gemv(c.tb, c.n, c.k, c.alpha, o.x.data(), o.b.data(), o.ldb, c.beta, got.data());
    std::vector<double> tol(static_cast<size_t>(c.n));
    for (int64_t j = 0; j < c.n; ++j) {
      double mag = 0.0;
      for (int64_t l = 0; l < c.k; ++l)
        mag += std::fabs(static_cast<double>(o.x[l]) *
                         (c.tb ? o.b[j * o.ldb + l] : o.b[l * o.ldb + j]));
      const double yterm = c.beta == 0.f ? 0.0 : std::fabs(c.beta * o.y0[j]);
      tol[j] = (c.k + 3) * kEps * (std::fabs(c.alpha) * mag + yterm);
    }
    expect_within(got, want, tol, name(c));
  }
}

TEST_F(F32Gemv, AnySplitOfTheColumnsGivesTheWholeCallsValues) {
  uint64_t seed = 300;
  for (const GemvCase& c : kCases) {
    const Operands o = operands(c, seed += 3);
    std::vector<float> whole = o.y0;
    opt().gemv(c.tb, c.n, c.k, c.alpha, o.x.data(), o.b.data(), o.ldb, c.beta, whole.data());
    // Blocks of 1, 3 and 5 columns take the kernel's short paths (one column,
    // masked lanes), the whole call its blocks of 8 (Bᵀ) or 32 and 8 (B) columns.
    for (const int64_t step : {int64_t{1}, int64_t{3}, int64_t{5}}) {
      std::vector<float> split = o.y0;
      for (int64_t j0 = 0; j0 < c.n; j0 += step)
        opt().gemv(c.tb, std::min(step, c.n - j0), c.k, c.alpha, o.x.data(),
                   c.tb ? o.b.data() + j0 * o.ldb : o.b.data() + j0, o.ldb, c.beta,
                   split.data() + j0);
      expect_same(split, whole, name(c) + " in blocks of " + std::to_string(step));
    }
  }
}

TEST_F(F32Gemv, BlockedOverThreadsGivesTheOneCallsValues) {
  // n·k ≥ 2^20: gemv_blocked splits the columns over the threads.
  for (const GemvCase& c :
       {GemvCase{2051, 515, true, 1.f, 0.f}, GemvCase{2051, 515, false, 1.f, 1.f}}) {
    const Operands o = operands(c, 500);
    std::vector<float> one = o.y0;
    opt().gemv(c.tb, c.n, c.k, c.alpha, o.x.data(), o.b.data(), o.ldb, c.beta, one.data());
    for (const int threads : {1, 2}) {
      linalg::ThreadLimit limit(threads);
      std::vector<float> got = o.y0;
      detail::gemv_blocked(opt().gemv, c.tb, c.n, c.k, c.alpha, o.x.data(), o.b.data(), o.ldb,
                           c.beta, got.data());
      expect_same(got, one, name(c) + " over " + std::to_string(threads) + " threads");
    }
  }
}

TEST(F32GemvReference, ByHand) {
  // x = [1, 2]; B = [[5, 6], [7, 8]]: x·B = [19, 22]; alpha 2, beta 1 on y = 1: [39, 45].
  const std::vector<float> x = {1, 2}, b = {5, 6, 7, 8};
  std::vector<float> y = {1, 1};
  f32_gemv_ref(false, 2, 2, 2.f, x.data(), b.data(), 2, 1.f, y.data());
  EXPECT_EQ(y, (std::vector<float>{39, 45}));
  // Bᵀ stored [[5, 6], [7, 8]]: x·Bᵀ = [1·5 + 2·6, 1·7 + 2·8] = [17, 23]; beta 0 ignores NaN.
  y = {std::numeric_limits<float>::quiet_NaN(), 0.f};
  f32_gemv_ref(true, 2, 2, 1.f, x.data(), b.data(), 2, 0.f, y.data());
  EXPECT_EQ(y, (std::vector<float>{17, 23}));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
