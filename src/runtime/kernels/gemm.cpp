// MatMul (numpy broadcasting) and Gemm operators over the registry's gemm
// kernel (its gemv kernel for a product of one row), in fixed blocks
// (gemm_partition.h).
#include "tailor/runtime/kernels/gemm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

std::string shape_text(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

struct MatmulPlan {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch;             // broadcast batch dims
  std::vector<int64_t> a_batch, b_batch;  // each right-aligned to batch.size(), 1 = broadcast
  std::vector<int64_t> out_shape;
};

MatmulPlan plan_matmul(std::span<const int64_t> a_shape, std::span<const int64_t> b_shape) {
  if (a_shape.empty() || b_shape.empty())
    throw Error("", "MatMul operands must have rank ≥ 1, got " + shape_text(a_shape) + " and " +
                        shape_text(b_shape));
  for (int64_t d : a_shape)
    if (d < 0) throw Error("", "MatMul: negative dim in " + shape_text(a_shape));
  for (int64_t d : b_shape)
    if (d < 0) throw Error("", "MatMul: negative dim in " + shape_text(b_shape));
  std::vector<int64_t> a(a_shape.begin(), a_shape.end()), b(b_shape.begin(), b_shape.end());
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatmulPlan p;
  p.m = a[a.size() - 2];
  p.k = a[a.size() - 1];
  p.n = b[b.size() - 1];
  if (b[b.size() - 2] != p.k)  // (messages built only on failure: this runs per call)
    throw Error(
        "", "MatMul inner dimensions differ: " + shape_text(a_shape) + " @ " + shape_text(b_shape));
  const size_t ra = a.size() - 2, rb = b.size() - 2, r = std::max(ra, rb);
  p.batch.assign(r, 1);
  p.a_batch.assign(r, 1);
  p.b_batch.assign(r, 1);
  for (size_t i = 0; i < ra; ++i) p.a_batch[r - ra + i] = a[i];
  for (size_t i = 0; i < rb; ++i) p.b_batch[r - rb + i] = b[i];
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = p.a_batch[i], db = p.b_batch[i];
    if (da != db && da != 1 && db != 1)
      throw Error("", "MatMul batch dims do not broadcast: " + shape_text(a_shape) + " @ " +
                          shape_text(b_shape));
    p.batch[i] = da == 1 ? db : da;
  }
  p.out_shape = p.batch;
  if (a_shape.size() > 1) p.out_shape.push_back(p.m);
  if (b_shape.size() > 1) p.out_shape.push_back(p.n);
  return p;
}

/// Products up to this many multiply-adds skip BLAS: its per-call cost
/// (argument checks, packing) passes the arithmetic there, e.g. a decoder
/// step's attention (2 query rows × head_dim 8 × a few hundred keys).
constexpr int64_t kSmallMatmulMacs = 16384;

/// y [m, n] = a [m, k] · b [k, n], row-major, one row of y at a time
/// (the inner loop runs along n, so it vectorizes).
void small_matmul(const float* a, const float* b, float* y, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    float* yr = y + i * n;
    std::fill(yr, yr + n, 0.f);
    for (int64_t p = 0; p < k; ++p) {
      const float av = a[i * k + p];
      const float* br = b + p * n;
      for (int64_t j = 0; j < n; ++j) yr[j] += av * br[j];
    }
  }
}

}  // namespace

std::vector<int64_t> matmul_output_shape(std::span<const int64_t> a_shape,
                                         std::span<const int64_t> b_shape) {
  return plan_matmul(a_shape, b_shape).out_shape;
}

void matmul(const float* a, std::span<const int64_t> a_shape, const float* b,
            std::span<const int64_t> b_shape, float* y) {
  const MatmulPlan p = plan_matmul(a_shape, b_shape);
  const KernelTable& kt = active_kernels();
  const F32GemmFn gemm_fn = kt.gemm;
  int64_t batches = 1, a_batches = 1, b_batches = 1;
  for (size_t i = 0; i < p.batch.size(); ++i) {
    batches *= p.batch[i];
    a_batches *= p.a_batch[i];
    b_batches *= p.b_batch[i];
  }
  if (batches == 0 || p.m == 0 || p.n == 0) return;
  const bool small = p.m * p.k * p.n <= kSmallMatmulMacs;
  if (b_batches == 1 && a_batches == batches) {
    // b is one matrix: all rows of a in one product.
    if (batches * p.m * p.k * p.n <= kSmallMatmulMacs)
      return small_matmul(a, b, y, batches * p.m, p.k, p.n);
    if (batches * p.m == 1)
      return detail::gemv_blocked(kt.gemv, false, p.n, p.k, 1.f, a, b, p.n, 0.f, y);
    if (kt.matmul_conv1x1 && p.n >= detail::kConv1x1MatmulMinColumns)
      return detail::matmul_by_conv1x1(kt, a, b, y, batches * p.m, p.k, p.n);
    detail::gemm_blocked(gemm_fn, false, false, batches * p.m, p.n, p.k, 1.f, a, p.k, b, p.n, 0.f,
                         y, p.n);
    return;
  }
  // Row-major strides (in matrices) of each operand's batch dims; 0 where broadcast.
  const size_t r = p.batch.size();
  std::vector<int64_t> sa(r, 0), sb(r, 0);
  int64_t acc_a = 1, acc_b = 1;
  for (size_t i = r; i-- > 0;) {
    sa[i] = p.a_batch[i] == 1 ? 0 : acc_a;
    sb[i] = p.b_batch[i] == 1 ? 0 : acc_b;
    acc_a *= p.a_batch[i];
    acc_b *= p.b_batch[i];
  }
  for (int64_t t = 0; t < batches; ++t) {
    int64_t ia = 0, ib = 0, rem = t;
    for (size_t i = r; i-- > 0;) {
      const int64_t idx = rem % p.batch[i];
      rem /= p.batch[i];
      ia += idx * sa[i];
      ib += idx * sb[i];
    }
    if (small) {
      small_matmul(a + ia * p.m * p.k, b + ib * p.k * p.n, y + t * p.m * p.n, p.m, p.k, p.n);
      continue;
    }
    if (p.m == 1) {
      detail::gemv_blocked(active_kernels().gemv, false, p.n, p.k, 1.f, a + ia * p.k,
                           b + ib * p.k * p.n, p.n, 0.f, y + t * p.n);
      continue;
    }
    detail::gemm_blocked(gemm_fn, false, false, p.m, p.n, p.k, 1.f, a + ia * p.m * p.k, p.k,
                         b + ib * p.k * p.n, p.n, 0.f, y + t * p.m * p.n, p.n);
  }
}

void gemm(const GemmParams& p, const float* a, const float* b, const float* c,
          std::span<const int64_t> c_shape, float* y, const Activation& act) {
  if (p.m < 0 || p.n < 0 || p.k < 0) throw Error("", "Gemm sizes must be non-negative");
  if (p.m == 0 || p.n == 0) return;
  const F32GemmFn gemm_fn = active_kernels().gemm;
  float beta = 0.f;
  if (c != nullptr && p.beta != 0.f) {
    // Unidirectional broadcast of C to [m, n]: dims aligned from the right.
    check(c_shape.size() <= 2, "", "Gemm C must have rank ≤ 2, got " + shape_text(c_shape));
    const int64_t cm = c_shape.size() == 2 ? c_shape[0] : 1;
    const int64_t cn = c_shape.empty() ? 1 : c_shape[c_shape.size() - 1];
    check((cm == 1 || cm == p.m) && (cn == 1 || cn == p.n), "",
          "Gemm C " + shape_text(c_shape) + " does not broadcast to [" + std::to_string(p.m) +
              ", " + std::to_string(p.n) + "]");
    for (int64_t i = 0; i < p.m; ++i) {
      const float* crow = c + (cm == 1 ? 0 : i * cn);
      float* yrow = y + i * p.n;
      if (cn == 1) {
        std::fill(yrow, yrow + p.n, crow[0]);
      } else {
        std::copy(crow, crow + p.n, yrow);
      }
    }
    beta = p.beta;
  }
  if (p.m == 1 && !p.trans_a)  // one row (a decoder step): a matrix-vector product
    detail::gemv_blocked(active_kernels().gemv, p.trans_b, p.n, p.k, p.alpha, a, b,
                         p.trans_b ? p.k : p.n, beta, y);
  else
    detail::gemm_blocked(gemm_fn, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a,
                         p.trans_a ? p.m : p.k, b, p.trans_b ? p.k : p.n, beta, y, p.n);
  if (act.kind != ActivationKind::none) apply_activation(act, y, y, p.m * p.n);
}

}  // namespace tailor::runtime::kernels
