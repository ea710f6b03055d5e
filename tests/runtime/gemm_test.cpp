// MatMul (numpy broadcasting, 1-D promotion) and Gemm (transposes, alpha,
// beta, C broadcast): hand-computed products and random shapes against
// direct loops.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/gemm.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

using testing::expect_close;
using testing::random_values;
using Shape = std::vector<int64_t>;

TEST(MatmulKernel, HandComputed) {
  // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> y(4);
  matmul(a.data(), Shape{2, 2}, b.data(), Shape{2, 2}, y.data());
  EXPECT_EQ(y, (std::vector<float>{19, 22, 43, 50}));
  // 1-D @ 2-D: [1, 2] @ [[5, 6], [7, 8]] = [19, 22], shape [2].
  EXPECT_EQ(matmul_output_shape(Shape{2}, Shape{2, 2}), Shape{2});
  matmul(a.data(), Shape{2}, b.data(), Shape{2, 2}, y.data());
  EXPECT_EQ(y[0], 19.f);
  EXPECT_EQ(y[1], 22.f);
  // 2-D @ 1-D: [[1, 2], [3, 4]] @ [5, 6] = [17, 39]; 1-D @ 1-D: a scalar (shape []).
  EXPECT_EQ(matmul_output_shape(Shape{2, 2}, Shape{2}), Shape{2});
  matmul(a.data(), Shape{2, 2}, b.data(), Shape{2}, y.data());
  EXPECT_EQ(y[0], 17.f);
  EXPECT_EQ(y[1], 39.f);
  EXPECT_EQ(matmul_output_shape(Shape{2}, Shape{2}), Shape{});
}

TEST(MatmulKernel, OutputShapesAndErrors) {
  EXPECT_EQ(matmul_output_shape(Shape{2, 1, 3, 4}, Shape{5, 4, 6}), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(matmul_output_shape(Shape{7, 3, 4}, Shape{4}), (Shape{7, 3}));
  EXPECT_EQ(matmul_output_shape(Shape{4}, Shape{2, 4, 5}), (Shape{2, 5}));
  EXPECT_THROW(matmul_output_shape(Shape{3, 4}, Shape{5, 6}), Error);
  EXPECT_THROW(matmul_output_shape(Shape{2, 3, 4}, Shape{3, 4, 5}), Error);
  EXPECT_THROW(matmul_output_shape(Shape{}, Shape{3}), Error);
}

// numpy.matmul by definition on broadcast batch indices.
void check_matmul(const Shape& as, const Shape& bs, uint64_t seed) {
  int64_t na = 1, nb = 1;
  for (int64_t d : as) na *= d;
  for (int64_t d : bs) nb *= d;
  const auto a = random_values(na, seed), b = random_values(nb, seed + 1);
  Shape a2 = as, b2 = bs;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  const size_t r = std::max(a2.size(), b2.size()) - 2;
  while (a2.size() - 2 < r) a2.insert(a2.begin(), 1);
  while (b2.size() - 2 < r) b2.insert(b2.begin(), 1);
  const int64_t m = a2[r], k = a2[r + 1], n = b2[r + 1];
  Shape batch(r);
  int64_t batches = 1;
  for (size_t i = 0; i < r; ++i) batches *= (batch[i] = std::max(a2[i], b2[i]));
  std::vector<double> want(static_cast<size_t>(batches * m * n)), mag(want.size());
  for (int64_t t = 0; t < batches; ++t) {
    // Decompose t into batch indices; an operand's index is 0 where its dim is 1.
    int64_t ia = 0, ib = 0, rem = t, sa = 1, sb = 1;
    for (size_t i = r; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      ia += (a2[i] == 1 ? 0 : idx) * sa;
      ib += (b2[i] == 1 ? 0 : idx) * sb;
      sa *= a2[i];
      sb *= b2[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mg = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double term = double(a[(ia * m + i) * k + l]) * b[(ib * k + l) * n + j];
          s += term;
          mg += std::fabs(term);
        }
        want[(t * m + i) * n + j] = s;
        mag[(t * m + i) * n + j] = mg;
      }
  }
  std::vector<float> y(want.size(), -99.f);
  matmul(a.data(), as, b.data(), bs, y.data());
  expect_close(y, want, mag, 1e-5, 1e-6, "matmul seed " + std::to_string(seed));
}

TEST(MatmulKernel, MatchesDefinitionWithBroadcasting) {
  check_matmul({7, 5}, {5, 9}, 1);
  check_matmul({3, 7, 5}, {5, 9}, 2);           // weight matrix: one sgemm over all rows
  check_matmul({2, 3, 4, 6}, {2, 3, 6, 4}, 3);  // attention scores
  check_matmul({2, 1, 4, 6}, {3, 6, 5}, 4);     // both sides broadcast
  check_matmul({4, 6}, {3, 6, 2}, 5);           // a broadcast over b's batch
  check_matmul({1, 3, 4, 6}, {6, 2}, 6);
  check_matmul({6}, {2, 6, 3}, 7);
  check_matmul({2, 4, 6}, {6}, 8);
  check_matmul({3, 1, 5}, {1, 5, 4}, 9);  // batch dims 3 vs 1
  // Past the small products: one b of n ≥ 16 columns takes the 1×1 conv
  // kernel where the table says so (matmul_conv1x1), with m not a multiple
  // of its 12 rows and n not of its 32 columns; n = 15 keeps gemm.
  check_matmul({40, 120}, {120, 700}, 10);
  check_matmul({3, 13, 64}, {64, 50}, 11);
  check_matmul({5, 64}, {64, 16}, 12);
  check_matmul({300, 64}, {64, 15}, 13);
}

// With KernelTable::matmul_conv1x1, a product with one b is the 1×1 conv
// kernel's, a as its weights: the same bits as calling it here, at 1 and 2
// threads (NaN in a reaches its row of y only).
TEST(MatmulKernel, OneWeightMatrixIsTheConv1x1KernelsProductWhereTheTableSaysSo) {
  const KernelTable& kt = active_kernels();
  if (!kt.matmul_conv1x1) GTEST_SKIP() << "matmul_conv1x1 is off for this CPU's table";
  const int64_t m = 29, k = 96, n = 1000;
  auto a = random_values(m * k, 21);
  const auto b = random_values(k * n, 22);
  a[7 * k + 5] = std::nanf("");
  Conv2dParams cp;
  cp.c_out = m, cp.c_in = k, cp.h = 1, cp.w = n;
  std::vector<float> packed(static_cast<size_t>(kt.conv1x1_pack(cp, a.data(), nullptr)));
  kt.conv1x1_pack(cp, a.data(), packed.data());
  std::vector<float> want(static_cast<size_t>(m * n)), one(want.size()), two(want.size());
  kt.conv1x1(cp, b.data(), packed.data(), nullptr, want.data(), Activation{});
  for (auto [threads, y] : {std::pair{1, &one}, std::pair{2, &two}}) {
    linalg::ThreadLimit limit(threads);
    matmul(a.data(), Shape{m, k}, b.data(), Shape{k, n}, y->data());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const bool nan_row = static_cast<int64_t>(i) / n == 7;
    ASSERT_EQ(std::isnan(one[i]), nan_row) << i;
    if (nan_row) continue;
    ASSERT_EQ(one[i], want[i]) << i;
    ASSERT_EQ(two[i], want[i]) << i;
  }
}

TEST(GemmKernel, HandComputedWithBroadcastC) {
  // A = [[1, 2], [3, 4]], B = [[1, 0], [1, 1]]: A·B = [[3, 2], [7, 4]];
  // alpha 2, beta 0.5, C = [10, 20] (row broadcast): [[11, 14], [19, 18]].
  const std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 1, 1}, c = {10, 20};
  GemmParams p;
  p.m = p.n = p.k = 2;
  p.alpha = 2.f;
  p.beta = 0.5f;
  std::vector<float> y(4);
  gemm(p, a.data(), b.data(), c.data(), Shape{2}, y.data());
  EXPECT_EQ(y, (std::vector<float>{11, 14, 19, 18}));
  // transB: B stored transposed ([[1, 1], [0, 1]] is Bᵀ), C column [m, 1] = [[1], [2]],
  // beta 1, alpha 1: [[4, 3], [9, 6]].
  const std::vector<float> bt = {1, 1, 0, 1}, ccol = {1, 2};
  p.trans_b = true;
  p.alpha = 1.f;
  p.beta = 1.f;
  gemm(p, a.data(), bt.data(), ccol.data(), Shape{2, 1}, y.data());
  EXPECT_EQ(y, (std::vector<float>{4, 3, 9, 6}));
  // Scalar C (rank 0) and Relu: A·Bᵀ − 5 → [[−2, −3], [2, −1]] → [[0, 0], [2, 0]].
  const float minus5 = -5.f;
  gemm(p, a.data(), bt.data(), &minus5, Shape{}, y.data(), Activation::relu());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 2, 0}));
  EXPECT_THROW(gemm(p, a.data(), bt.data(), c.data(), Shape{3}, y.data()), Error);
}

TEST(GemmKernel, MatchesDefinitionForAllTransposes) {
  const int64_t m = 5, n = 7, k = 6;
  const auto a = random_values(m * k, 11), b = random_values(k * n, 12),
             c = random_values(m * n, 13);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cs : {Shape{m, n}, Shape{1, n}, Shape{m, 1}, Shape{}}) {
        GemmParams p{m, n, k, ta == 1, tb == 1, 0.7f, -1.3f};
        std::vector<double> want(m * n), mag(m * n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0, mg = 0;
            for (int64_t l = 0; l < k; ++l) {
              const double av = ta ? a[l * m + i] : a[i * k + l];
              const double bv = tb ? b[j * k + l] : b[l * n + j];
              s += av * bv;
              mg += std::fabs(av * bv);
            }
            const int64_t ci = (cs.size() == 2 && cs[0] == m ? i * (cs[1] == n ? n : 1) : 0) +
                               (cs.size() >= 1 && cs.back() == n ? j : 0);
            const double cv = c[ci];
            want[i * n + j] = 0.7f * s + double(-1.3f) * cv;
            mag[i * n + j] = 0.7 * mg + 1.3 * std::fabs(cv);
          }
        std::vector<float> y(m * n);
        gemm(p, a.data(), b.data(), c.data(), cs, y.data());
        expect_close(y, want, mag, 1e-5, 1e-6,
                     "gemm ta " + std::to_string(ta) + " tb " + std::to_string(tb) + " C rank " +
                         std::to_string(cs.size()));
      }
}

}  // namespace
}  // namespace tailor::runtime::kernels
