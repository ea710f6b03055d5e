// `tucker`: truncated higher-order SVD (De Lathauwer, De Moor & Vandewalle,
// "A Multilinear Singular Value Decomposition", SIAM J. Matrix Anal. Appl.
// 21(4), 2000). A conv kernel [out, cin, kh, kw] is decomposed as Tucker-2 over
// its (out, cin) modes, spatial modes kept (Kim et al., "Compression of Deep
// Convolutional Neural Networks for Fast and Low Power Mobile Applications",
// ICLR 2016); any other weight is viewed [out, in] and reshaped [out, c1, c2]
// with in = c1·c2 balanced (c1 ≥ c2), all three modes factored.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "catalog.h"
#include "common.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/svd.h"
#include "tailor/schemes/tucker.h"

namespace tailor::schemes::detail {
namespace {

/// Mode sizes d, ranks r and whether mode 2 is factored.
struct TuckerPlan {
  std::vector<int64_t> dims;   // {d0, d1, d2}
  std::vector<int64_t> ranks;  // {r0, r1, r2}; r2 = d2 when mode 2 is not factored
  bool factor_mode2 = true;
};

// r_k = ceil(fraction·d_k), at least 1, at most d_k and the other modes'
// product (the rank of the mode-k unfolding cannot exceed it).
TuckerPlan plan_tucker(const Shape& shape, double fraction) {
  TuckerPlan p;
  if (shape.size() == 4) {
    p.dims = {shape[0], shape[1], shape[2] * shape[3]};
    p.factor_mode2 = false;
  } else {
    const MatrixDims d = matrix_dims(shape);
    const std::vector<int64_t> c = balanced_factors(d.in, 2);
    p.dims = {d.out, c[0], c[1]};
  }
  const int64_t total = product(p.dims, 0, 3);
  for (size_t k = 0; k < 3; ++k) {
    const int64_t d = p.dims[k];
    auto r = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(d) - 1e-9));
    r = std::clamp<int64_t>(r, 1, std::min(d, total / d));
    p.ranks.push_back(k == 2 && !p.factor_mode2 ? d : r);
  }
  return p;
}

uint64_t tucker_bytes(const Shape& s, const SchemeParams& params) {
  const TuckerPlan p = plan_tucker(s, params.tucker_rank_fraction);
  int64_t n = product(p.ranks, 0, 3) + p.dims[0] * p.ranks[0] + p.dims[1] * p.ranks[1];
  if (p.factor_mode2) n += p.dims[2] * p.ranks[2];
  return 4 * static_cast<uint64_t>(n);
}

/// Factors "core" f32 [r0, r1, r2], "U0" [d0, r0], "U1" [d1, r1] and, when
/// mode 2 is factored, "U2" [d2, r2]: Ŵ[a, b, c] = Σ core[p, q, t]·U0[a, p]·U1[b, q]·U2[c, t].
class TuckerWeight final : public Encoded {
 public:
  TuckerWeight(TuckerPlan plan, std::vector<Factor> factors)
      : Encoded("tucker", plan.dims[0], plan.dims[1] * plan.dims[2], std::move(factors)),
        p_(std::move(plan)) {}

  Tensor decode() const override {
    const auto [d0, d1, d2] = std::array{p_.dims[0], p_.dims[1], p_.dims[2]};
    const auto [r0, r1, r2] = std::array{p_.ranks[0], p_.ranks[1], p_.ranks[2]};
    // T = core ×2 U2: [r0·r1, r2]·U2ᵀ → [r0, r1, d2].
    std::vector<float> t(static_cast<size_t>(r0 * r1 * d2));
    if (p_.factor_mode2)
      linalg::sgemm(false, true, r0 * r1, d2, r2, 1.0f, factor("core").data<float>(), r2,
                    factor("U2").data<float>(), r2, 0.0f, t.data(), d2);
    else
      std::copy_n(factor("core").data<float>(), t.size(), t.data());
    // T' = T ×1 U1: for each p, U1·T[p] ([d1, r1]·[r1, d2]) → [r0, d1, d2].
    std::vector<float> t2(static_cast<size_t>(r0 * d1 * d2));
    for (int64_t q = 0; q < r0; ++q)
      linalg::sgemm(false, false, d1, d2, r1, 1.0f, factor("U1").data<float>(), r1,
                    t.data() + q * r1 * d2, d2, 0.0f, t2.data() + q * d1 * d2, d2);
    // Ŵ = U0·T' ([d0, r0]·[r0, d1·d2]).
    Tensor w = Tensor::zeros(DType::f32, {d0, d1 * d2});
    linalg::sgemm(false, false, d0, d1 * d2, r0, 1.0f, factor("U0").data<float>(), r0, t2.data(),
                  d1 * d2, 0.0f, w.mutable_data<float>(), d1 * d2);
    return w;
  }

  // X [B, d1, d2] contracted with U2, U1, the core and U0 in turn.
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    const auto [d0, d1, d2] = std::array{p_.dims[0], p_.dims[1], p_.dims[2]};
    const auto [r0, r1, r2] = std::array{p_.ranks[0], p_.ranks[1], p_.ranks[2]};
    // t1[b, j1, t] = Σ_j2 x[b, j1, j2]·U2[j2, t]  → [B, d1, r2]
    std::vector<float> t1(static_cast<size_t>(batch * d1 * r2));
    if (p_.factor_mode2)
      linalg::sgemm(false, false, batch * d1, r2, d2, 1.0f, xc.data<float>(), d2,
                    factor("U2").data<float>(), r2, 0.0f, t1.data(), r2);
    else
      std::copy_n(xc.data<float>(), t1.size(), t1.data());
    // t2[b, q, t] = Σ_j1 U1[j1, q]·t1[b, j1, t]  → [B, r1, r2]
    std::vector<float> t2(static_cast<size_t>(batch * r1 * r2));
    for (int64_t b = 0; b < batch; ++b)
      linalg::sgemm(true, false, r1, r2, d1, 1.0f, factor("U1").data<float>(), r1,
                    t1.data() + b * d1 * r2, r2, 0.0f, t2.data() + b * r1 * r2, r2);
    // t3[b, p] = Σ_{q,t} core[p, q, t]·t2[b, q, t]  → [B, r0]
    std::vector<float> t3(static_cast<size_t>(batch * r0));
    linalg::sgemm(false, true, batch, r0, r1 * r2, 1.0f, t2.data(), r1 * r2,
                  factor("core").data<float>(), r1 * r2, 0.0f, t3.data(), r0);
    // y[b, a] = Σ_p t3[b, p]·U0[a, p]  → [B, d0]
    Tensor y = Tensor::zeros(DType::f32, {batch, d0});
    linalg::sgemm(false, true, batch, d0, r0, 1.0f, t3.data(), r0, factor("U0").data<float>(), r0,
                  0.0f, y.mutable_data<float>(), d0);
    return y;
  }

  int64_t macs(int64_t batch) const override {
    const auto [d0, d1, d2] = std::array{p_.dims[0], p_.dims[1], p_.dims[2]};
    const auto [r0, r1, r2] = std::array{p_.ranks[0], p_.ranks[1], p_.ranks[2]};
    const int64_t mode2 = p_.factor_mode2 ? d1 * d2 * r2 : 0;
    return batch * (mode2 + d1 * r1 * r2 + r0 * r1 * r2 + r0 * d0);
  }

 private:
  TuckerPlan p_;
};

// Leading r left singular vectors [d_mode, r] of the mode-`mode` unfolding of
// X [d0, d1, d2] (row-major at x). A small tensor takes them from an SVD of
// the unfolding (permuted copy); one of at least svd.gram_min_elements
// elements, or a thin one (below), from the eigenvectors of the unfolding's Gram matrix
// X_(k)·X_(k)ᵀ [d_k, d_k], accumulated in double from X in place (linalg::svd_gram's method): mode
// 0 is X [d0, d1·d2] itself (its smaller side's Gram, then U = X·V·diag(1/σ) when d0 > d1·d2), mode
// 1 sums X_a·X_aᵀ and mode 2 X_aᵀ·X_a over the slices X_a [d1, d2]. No copy of X.
// Whether leading_vectors takes an SVD of the mode-`mode` unfolding itself
// (a small one) rather than its Gram matrix. A thin unfolding takes the Gram
// path at any size, where gesdd would also form the long side's vectors: one
// of few rows (cols ≥ 4·rows), or mode 0 of few columns (rows ≥ 4·cols;
// svd_gram forms U from the [cols, cols] Gram).
bool svd_of_unfolding(const std::vector<int64_t>& dims, int mode, const linalg::SvdOptions& opts) {
  const int64_t rows = dims[mode], cols = dims[0] * dims[1] * dims[2] / rows;
  const bool thin = cols >= 4 * rows || (mode == 0 && rows >= 4 * cols);
  return rows * cols < opts.gram_min_elements && !thin;
}

linalg::Matrix leading_vectors(const float* x, const std::vector<int64_t>& dims, int mode,
                               int64_t r, const linalg::SvdOptions& opts) {
  const int64_t d0 = dims[0], d1 = dims[1], d2 = dims[2];
  const int64_t rows = dims[mode], cols = d0 * d1 * d2 / rows;
  if (svd_of_unfolding(dims, mode, opts)) {
    if (mode == 0) return linalg::svd_truncated(to_matrix(x, d0, d1 * d2), r, opts).u;
    const std::vector<int> perm = mode == 1 ? std::vector<int>{1, 0, 2} : std::vector<int>{2, 0, 1};
    const std::vector<float> unfolding = permute(x, dims, perm);
    return linalg::svd_truncated(to_matrix(unfolding.data(), rows, cols), r, opts).u;
  }
  if (mode == 0) return linalg::svd_gram(x, d0, d1 * d2, r, linalg::SvdSides::left).u;
  linalg::MatrixD g = linalg::MatrixD::Zero(rows, rows);
  for (int64_t a = 0; a < d0; ++a)
    linalg::gram_accumulate(x + a * d1 * d2, d1, d2, /*trans=*/mode == 2, g);
  return linalg::top_eigenpairs(g, r).vectors;
}

/// Whether leading_vectors(x, dims, mode, r, opts) takes the exact SVD
/// (svd_truncated → gesdd) of the mode-`mode` unfolding: a small one, not
/// thin, whose rank svd_prefers_exact.
bool takes_exact_svd(const std::vector<int64_t>& dims, int mode, int64_t r,
                     const linalg::SvdOptions& opts) {
  const int64_t rows = dims[mode], cols = dims[0] * dims[1] * dims[2] / rows;
  return svd_of_unfolding(dims, mode, opts) && linalg::svd_prefers_exact(rows, cols, r, opts);
}

/// encode_tucker with the mode-0 factor from `u_svd` and, for a 1×1 conv
/// kernel, the mode-1 factor from `vt_svd`, where leading_vectors would take
/// the same exact SVDs (encode_tucker_reusing).
std::unique_ptr<Encoded> encode_tucker_with(const Tensor& w, const SchemeParams& params,
                                            const linalg::Matrix* u_svd,
                                            const linalg::Matrix* vt_svd) {
  const Tensor m = weight_matrix(w, "tucker");
  TuckerPlan p = plan_tucker(w.shape(), params.tucker_rank_fraction);
  const auto [d0, d1, d2] = std::array{p.dims[0], p.dims[1], p.dims[2]};
  const auto [r0, r1, r2] = std::array{p.ranks[0], p.ranks[1], p.ranks[2]};
  const float* x = m.data<float>();

  // HOSVD factors: leading left singular vectors of each mode's unfolding.
  // Mode 0 unfolds to W [d0, d1·d2] itself, so its vectors are W's U; a 1×1
  // kernel (d2 = 1, mode 2 kept) unfolds mode 1 to Wᵀ, whose vectors are W's V.
  const bool reuse_u = u_svd && takes_exact_svd(p.dims, 0, r0, params.svd) && u_svd->rows() == d0 &&
                       u_svd->cols() >= r0;
  const bool reuse_v = vt_svd && !p.factor_mode2 && d2 == 1 &&
                       takes_exact_svd(p.dims, 1, r1, params.svd) && vt_svd->cols() == d1 &&
                       vt_svd->rows() >= r1;
  const linalg::Matrix u0 =
      reuse_u ? linalg::Matrix(u_svd->leftCols(r0)) : leading_vectors(x, p.dims, 0, r0, params.svd);
  const linalg::Matrix u1 = reuse_v ? linalg::Matrix(vt_svd->topRows(r1).transpose())
                                    : leading_vectors(x, p.dims, 1, r1, params.svd);
  linalg::Matrix u2;
  if (p.factor_mode2) u2 = leading_vectors(x, p.dims, 2, r2, params.svd);

  // Core = W ×0 U0ᵀ ×1 U1ᵀ ×2 U2ᵀ.
  std::vector<float> t1(static_cast<size_t>(r0 * d1 * d2));
  linalg::sgemm(true, false, r0, d1 * d2, d0, 1.0f, u0.data(), r0, x, d1 * d2, 0.0f, t1.data(),
                d1 * d2);
  std::vector<float> t2(static_cast<size_t>(r0 * r1 * d2));
  for (int64_t q = 0; q < r0; ++q)
    linalg::sgemm(true, false, r1, d2, d1, 1.0f, u1.data(), r1, t1.data() + q * d1 * d2, d2, 0.0f,
                  t2.data() + q * r1 * d2, d2);
  Tensor core = Tensor::zeros(DType::f32, {r0, r1, r2});
  if (p.factor_mode2)
    linalg::sgemm(false, false, r0 * r1, r2, d2, 1.0f, t2.data(), d2, u2.data(), r2, 0.0f,
                  core.mutable_data<float>(), r2);
  else
    std::copy_n(t2.data(), t2.size(), core.mutable_data<float>());

  std::vector<Factor> factors{
      {"core", core}, {"U0", to_tensor(u0, {d0, r0})}, {"U1", to_tensor(u1, {d1, r1})}};
  if (p.factor_mode2) factors.push_back({"U2", to_tensor(u2, {d2, r2})});
  return std::make_unique<TuckerWeight>(std::move(p), std::move(factors));
}

std::unique_ptr<Encoded> encode_tucker(const Tensor& w, const SchemeParams& params) {
  return encode_tucker_with(w, params, nullptr, nullptr);
}

}  // namespace

std::unique_ptr<Encoded> tucker_from_factors(std::vector<Factor> factors) {
  TuckerPlan p;
  const Tensor* core = nullptr;
  const Tensor* u[3] = {nullptr, nullptr, nullptr};
  for (const Factor& f : factors) {
    if (f.name == "core") core = &f.tensor;
    for (int k = 0; k < 3; ++k)
      if (f.name == "U" + std::to_string(k)) u[k] = &f.tensor;
  }
  p.factor_mode2 = u[2] != nullptr;
  p.dims = {u[0]->dim(0), u[1]->dim(0), p.factor_mode2 ? u[2]->dim(0) : core->dim(2)};
  p.ranks = {core->dim(0), core->dim(1), core->dim(2)};
  return std::make_unique<TuckerWeight>(std::move(p), std::move(factors));
}

const SchemeTraits kTuckerTraits{
    .kind = SchemeKind::tucker,
    .pattern = "tucker",
    .reference = "HOSVD (De Lathauwer et al. 2000); Tucker-2 for conv kernels (Kim et al. 2016)",
    .label = [](const SchemeParams&) { return std::string("tucker"); },
    .applicable =
        [](const Shape& s, const SchemeParams& p) {
          return is_weight_shape(s) && p.tucker_rank_fraction > 0 && p.tucker_rank_fraction <= 1;
        },
    // 4·(core + factors): 4·(r0·r1·r2 + d0·r0 + d1·r1 [+ d2·r2]).
    .bytes = tucker_bytes,
    .encode = encode_tucker,
};

}  // namespace tailor::schemes::detail

namespace tailor::schemes {

std::unique_ptr<Encoded> encode_tucker_reusing(const Tensor& w, const SchemeParams& params,
                                               const linalg::Matrix& u, const linalg::Matrix& vt) {
  return detail::encode_tucker_with(w, params, &u, vt.size() > 0 ? &vt : nullptr);
}

}  // namespace tailor::schemes
