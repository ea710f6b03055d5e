// `lowrank-r{R}`: the best rank-R approximation W ≈ A·B (Eckart–Young), A
// [out, R] = U_R·diag(σ_R), B [R, in] = V_Rᵀ, from the truncated SVD (Halko,
// Martinsson & Tropp 2011, randomized with power iterations; exact gesdd for
// small matrices, see linalg::svd_truncated).
#include <fmt/format.h>

#include <algorithm>

#include "catalog.h"
#include "common.h"
#include "tailor/core/error.h"
#include "tailor/linalg/svd.h"

namespace tailor::schemes::detail {
namespace {

std::string lowrank_label(const SchemeParams& p) {
  return fmt::format("lowrank-r{}", p.rank);
}

/// Factors "A" f32 [out, R] and "B" f32 [R, in]; Ŵ = A·B.
class LowRankWeight final : public Encoded {
 public:
  LowRankWeight(std::string label, Tensor a, Tensor b)
      : Encoded(std::move(label), a.dim(0), b.dim(1), {{"A", a}, {"B", b}}), rank_(a.dim(1)) {}

  Tensor decode() const override {
    Tensor w = Tensor::zeros(DType::f32, {out(), in()});
    linalg::sgemm(false, false, out(), in(), rank_, 1.0f, factor("A").data<float>(), rank_,
                  factor("B").data<float>(), in(), 0.0f, w.mutable_data<float>(), in());
    return w;
  }

  // Y = (X·Bᵀ)·Aᵀ: two GEMMs through the [batch, R] bottleneck.
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    Tensor t = Tensor::zeros(DType::f32, {batch, rank_});
    Tensor y = Tensor::zeros(DType::f32, {batch, out()});
    linalg::sgemm(false, true, batch, rank_, in(), 1.0f, xc.data<float>(), in(),
                  factor("B").data<float>(), in(), 0.0f, t.mutable_data<float>(), rank_);
    linalg::sgemm(false, true, batch, out(), rank_, 1.0f, t.data<float>(), rank_,
                  factor("A").data<float>(), rank_, 0.0f, y.mutable_data<float>(), out());
    return y;
  }

  int64_t macs(int64_t batch) const override { return batch * rank_ * (in() + out()); }

 private:
  int64_t rank_;
};

/// A = U_R·diag(σ_R), B = V_Rᵀ from the leading R triplets of `f`.
std::unique_ptr<Encoded> from_svd(const std::string& label, const linalg::Svd& f, int64_t r) {
  const int64_t out = f.u.rows(), in = f.vt.cols();
  linalg::Matrix a = f.u.leftCols(r);
  for (int64_t k = 0; k < r; ++k) a.col(k) *= f.s(k);
  return std::make_unique<LowRankWeight>(label, to_tensor(a, {out, r}),
                                         to_tensor(f.vt.topRows(r), {r, in}));
}

std::unique_ptr<Encoded> encode_lowrank(const Tensor& w, const SchemeParams& p) {
  const std::string label = lowrank_label(p);
  const Tensor m = weight_matrix(w, label);
  const int64_t out = m.dim(0), in = m.dim(1), r = p.rank;
  check(r >= 1 && r <= std::min(out, in), label,
        fmt::format("rank must be in [1, {}] for a [{}, {}] weight", std::min(out, in), out, in));
  return from_svd(label, linalg::svd_truncated(to_matrix(m.data<float>(), out, in), r, p.svd), r);
}

}  // namespace

std::unique_ptr<Encoded> lowrank_from_factors(std::string label, Tensor a, Tensor b) {
  return std::make_unique<LowRankWeight>(std::move(label), std::move(a), std::move(b));
}

const SchemeTraits kLowRankTraits{
    .kind = SchemeKind::lowrank,
    .pattern = "lowrank-r{R}",
    .reference = "truncated SVD (Eckart & Young 1936; Halko, Martinsson & Tropp 2011)",
    .label = lowrank_label,
    .applicable =
        [](const Shape& s, const SchemeParams& p) {
          const MatrixDims d = matrix_dims(s);
          return is_weight_shape(s) && p.rank >= 1 && p.rank <= std::min(d.out, d.in);
        },
    // 4·R·(out + in).
    .bytes = [](const Shape& s, const SchemeParams& p) -> uint64_t {
      const MatrixDims d = matrix_dims(s);
      return 4 * static_cast<uint64_t>(p.rank * (d.out + d.in));
    },
    .encode = encode_lowrank,
};

}  // namespace tailor::schemes::detail

namespace tailor::schemes {

std::unique_ptr<Encoded> lowrank_from_svd(const linalg::Svd& svd, int64_t rank) {
  SchemeParams p;
  p.rank = rank;
  const std::string label = detail::lowrank_label(p);
  check(rank >= 1 && rank <= svd.s.size() && svd.u.cols() == svd.s.size() &&
            svd.vt.rows() == svd.s.size(),
        label, fmt::format("rank must be in [1, {}] (the triplets of the SVD)", svd.s.size()));
  return detail::from_svd(label, svd, rank);
}

std::unique_ptr<Encoded> lowrank_from_svd(const linalg::Svd& svd, int64_t rank, const Tensor& w) {
  const bool has_u = svd.u.size() > 0, has_vt = svd.vt.size() > 0;
  if (has_u && has_vt) return lowrank_from_svd(svd, rank);
  SchemeParams p;
  p.rank = rank;
  const std::string label = detail::lowrank_label(p);
  const int64_t k = svd.s.size();
  check(w.dtype() == DType::f32 && w.shape().size() == 2 && w.is_contiguous() && (has_u || has_vt),
        label, "expected an f32 contiguous [out, in] weight and one side of its SVD");
  const int64_t out = w.dim(0), in = w.dim(1);
  check(rank >= 1 && rank <= k &&
            (has_u ? svd.u.rows() == out && svd.u.cols() == k
                   : svd.vt.rows() == k && svd.vt.cols() == in),
        label,
        fmt::format("rank must be in [1, {}] (the triplets of the SVD) and the SVD must match "
                    "the weight [{}, {}]",
                    k, out, in));
  Tensor a = Tensor::zeros(DType::f32, {out, rank});
  Tensor b = Tensor::zeros(DType::f32, {rank, in});
  float* pa = a.mutable_data<float>();
  float* pb = b.mutable_data<float>();
  if (has_u) {
    // A = U_R·diag(σ_R); B = diag(1/σ_R)·U_Rᵀ·W.
    for (int64_t i = 0; i < out; ++i)
      for (int64_t j = 0; j < rank; ++j) pa[i * rank + j] = svd.u(i, j) * svd.s(j);
    linalg::sgemm(true, false, rank, in, out, 1.0f, svd.u.data(), k, w.data<float>(), in, 0.0f, pb,
                  in);
    for (int64_t j = 0; j < rank; ++j)
      for (int64_t c = 0; c < in; ++c)
        pb[j * in + c] = svd.s(j) > 0 ? pb[j * in + c] / svd.s(j) : 0;
  } else {
    // A = W·V_R; B = V_Rᵀ.
    linalg::sgemm(false, true, out, rank, in, 1.0f, w.data<float>(), in, svd.vt.data(), in, 0.0f,
                  pa, rank);
    std::copy_n(svd.vt.data(), rank * in, pb);
  }
  return std::make_unique<detail::LowRankWeight>(label, std::move(a), std::move(b));
}

}  // namespace tailor::schemes
