// `monarch`: a Monarch matrix (Dao et al., "Monarch: Expressive Structured
// Matrices for Efficient and Accurate Training", ICML 2022) for square
// n = m²: W[l·m + s, ri·m + j] ≈ L[ri, j, l]·R[l, s, ri], so every m×m block
// (output block l, input block ri) is rank one; the projection takes each
// block's best rank-1 approximation (its leading singular triplet, Dao et al. §3.3).
#include <cmath>

#include "catalog.h"
#include "common.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/svd.h"

namespace tailor::schemes::detail {
namespace {

// m with m² = n, or 0 when n is not a perfect square.
int64_t exact_sqrt(int64_t n) {
  auto m = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  while (m * m > n) --m;
  while ((m + 1) * (m + 1) <= n) ++m;
  return m * m == n ? m : 0;
}

bool monarch_applicable(const Shape& s, const SchemeParams&) {
  const MatrixDims d = matrix_dims(s);
  return is_weight_shape(s) && d.out == d.in && exact_sqrt(d.in) > 0;
}

/// Factors "L" f32 [m, m, m] indexed [ri, j, l] and "R" f32 [m, m, m] indexed
/// [l, s, ri]; each block's σ is split as √σ into both.
class MonarchWeight final : public Encoded {
 public:
  MonarchWeight(int64_t m, Tensor l, Tensor r)
      : Encoded("monarch", m * m, m * m, {{"L", std::move(l)}, {"R", std::move(r)}}), m_(m) {}

  Tensor decode() const override {
    const float* lf = factor("L").data<float>();
    const float* rf = factor("R").data<float>();
    const int64_t m = m_, n = m * m;
    Tensor w = Tensor::zeros(DType::f32, {n, n});
    float* p = w.mutable_data<float>();
    for (int64_t l = 0; l < m; ++l)
      for (int64_t s = 0; s < m; ++s)
        for (int64_t ri = 0; ri < m; ++ri)
          for (int64_t j = 0; j < m; ++j)
            p[(l * m + s) * n + ri * m + j] = lf[(ri * m + j) * m + l] * rf[(l * m + s) * m + ri];
    return w;
  }

  // Two block-diagonal products with a transpose between them:
  // Z[b, ri, l] = Σ_j x[b, ri·m + j]·L[ri, j, l]; Y[b, l·m + s] = Σ_ri R[l, s, ri]·Z[b, ri, l].
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    const int64_t m = m_, n = m * m;
    const float* lf = factor("L").data<float>();
    const float* rf = factor("R").data<float>();
    std::vector<float> z(static_cast<size_t>(batch * n)), zt(z.size());
    for (int64_t ri = 0; ri < m; ++ri)
      linalg::sgemm(false, false, batch, m, m, 1.0f, xc.data<float>() + ri * m, n, lf + ri * m * m,
                    m, 0.0f, z.data() + ri * m, n);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t ri = 0; ri < m; ++ri)
        for (int64_t l = 0; l < m; ++l) zt[b * n + l * m + ri] = z[b * n + ri * m + l];
    Tensor y = Tensor::zeros(DType::f32, {batch, n});
    for (int64_t l = 0; l < m; ++l)
      linalg::sgemm(false, true, batch, m, m, 1.0f, zt.data() + l * m, n, rf + l * m * m, m, 0.0f,
                    y.mutable_data<float>() + l * m, n);
    return y;
  }

  int64_t macs(int64_t batch) const override { return 2 * batch * m_ * m_ * m_; }

 private:
  int64_t m_;
};

std::unique_ptr<Encoded> encode_monarch(const Tensor& w, const SchemeParams&) {
  const Tensor mat = weight_matrix(w, "monarch");
  const int64_t n = mat.dim(0), m = exact_sqrt(n);
  const float* p = mat.data<float>();
  Tensor lt = Tensor::zeros(DType::f32, {m, m, m});
  Tensor rt = Tensor::zeros(DType::f32, {m, m, m});
  float* lf = lt.mutable_data<float>();
  float* rf = rt.mutable_data<float>();
  linalg::Matrix block(m, m);
  for (int64_t l = 0; l < m; ++l)
    for (int64_t ri = 0; ri < m; ++ri) {
      for (int64_t s = 0; s < m; ++s)
        for (int64_t j = 0; j < m; ++j) block(s, j) = p[(l * m + s) * n + ri * m + j];
      if (block.cwiseAbs().maxCoeff() == 0) continue;  // a zero block stays zero
      const linalg::Svd f = linalg::svd_exact(block);
      const float root = std::sqrt(f.s(0));
      for (int64_t s = 0; s < m; ++s) rf[(l * m + s) * m + ri] = root * f.u(s, 0);
      for (int64_t j = 0; j < m; ++j) lf[(ri * m + j) * m + l] = root * f.vt(0, j);
    }
  return std::make_unique<MonarchWeight>(m, std::move(lt), std::move(rt));
}

}  // namespace

std::unique_ptr<Encoded> monarch_from_factors(int64_t m, Tensor l, Tensor r) {
  return std::make_unique<MonarchWeight>(m, std::move(l), std::move(r));
}

const SchemeTraits kMonarchTraits{
    .kind = SchemeKind::monarch,
    .pattern = "monarch",
    .reference = "Dao et al., Monarch, ICML 2022 (blockwise rank-1 projection)",
    .label = [](const SchemeParams&) { return std::string("monarch"); },
    .applicable = monarch_applicable,
    // 4·2·m³ (two [m, m, m] f32 factors).
    .bytes = [](const Shape& s, const SchemeParams&) -> uint64_t {
      const int64_t m = exact_sqrt(matrix_dims(s).in);
      return 8 * static_cast<uint64_t>(m * m * m);
    },
    .encode = encode_monarch,
};

}  // namespace tailor::schemes::detail
