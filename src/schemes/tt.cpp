// `tt`: tensor-train matrix by TT-SVD (Oseledets, "Tensor-Train
// Decomposition", SIAM J. Sci. Comput. 33(5), 2011, Algorithm 1; the matrix
// layout of Novikov et al., "Tensorizing Neural Networks", NeurIPS 2015).
// out = o_1⋯o_d and in = i_1⋯i_d are split into balanced factors; core k is
// G_k [r_{k−1}, o_k, i_k, r_k] and
//   Ŵ[(o_1…o_d), (i_1…i_d)] = G_1[:, o_1, i_1, :]·G_2[:, o_2, i_2, :]⋯G_d[:, o_d, i_d, :].
// Bond ranks r_k = min(cap, r_{k−1}·o_k·i_k, Π_{j>k} o_j·i_j), r_0 = r_d = 1.
#include <fmt/format.h>

#include <algorithm>

#include "catalog.h"
#include "common.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/svd.h"

namespace tailor::schemes::detail {
namespace {

struct TtPlan {
  std::vector<int64_t> o, i;  // mode factors of out and in, d each
  std::vector<int64_t> r;     // d + 1 bond ranks, r[0] = r[d] = 1
  size_t cores() const { return o.size(); }
  int64_t mode(size_t k) const { return o[k] * i[k]; }
};

TtPlan plan_tt(const Shape& shape, const SchemeParams& params) {
  const MatrixDims d = matrix_dims(shape);
  const int count = std::max(params.tt_cores, 1);
  TtPlan p{balanced_factors(d.out, count), balanced_factors(d.in, count), {}};
  p.r.assign(p.cores() + 1, 1);
  for (size_t k = 1; k < p.cores(); ++k) {
    int64_t right = 1;
    for (size_t j = k; j < p.cores(); ++j) right *= p.mode(j);
    int64_t r = std::min(p.r[k - 1] * p.mode(k - 1), right);
    if (params.tt_max_rank > 0) r = std::min(r, params.tt_max_rank);
    p.r[k] = r;
  }
  return p;
}

uint64_t tt_bytes(const Shape& s, const SchemeParams& params) {
  const TtPlan p = plan_tt(s, params);
  int64_t n = 0;
  for (size_t k = 0; k < p.cores(); ++k) n += p.r[k] * p.mode(k) * p.r[k + 1];
  return 4 * static_cast<uint64_t>(n);
}

/// Factors "G1" … "Gd": f32 [r_{k−1}, o_k, i_k, r_k].
class TtWeight final : public Encoded {
 public:
  TtWeight(TtPlan plan, std::vector<Factor> cores)
      : Encoded("tt", product(plan.o, 0, plan.o.size()), product(plan.i, 0, plan.i.size()),
                std::move(cores)),
        p_(std::move(plan)) {}

  // Chain the cores over the bonds, M [(o_1 i_1 … o_k i_k), r_k], then reorder
  // the axes (o_1, i_1, …, o_d, i_d) → (o_1 … o_d, i_1 … i_d).
  Tensor decode() const override {
    const size_t d = p_.cores();
    std::vector<float> m(factors()[0].tensor.data<float>(),
                         factors()[0].tensor.data<float>() + factors()[0].tensor.numel());
    int64_t rows = p_.mode(0);
    for (size_t k = 1; k < d; ++k) {
      const int64_t cols = p_.mode(k) * p_.r[k + 1];
      std::vector<float> next(static_cast<size_t>(rows * cols));
      linalg::sgemm(false, false, rows, cols, p_.r[k], 1.0f, m.data(), p_.r[k],
                    factors()[k].tensor.data<float>(), cols, 0.0f, next.data(), cols);
      m = std::move(next);
      rows *= p_.mode(k);
    }
    std::vector<int64_t> dims;
    std::vector<int> perm;
    for (size_t k = 0; k < d; ++k) {
      dims.push_back(p_.o[k]);
      dims.push_back(p_.i[k]);
      perm.push_back(static_cast<int>(2 * k));
    }
    for (size_t k = 0; k < d; ++k) perm.push_back(static_cast<int>(2 * k + 1));
    Tensor w = Tensor::zeros(DType::f32, {out(), in()});
    permute_into(m.data(), dims, perm, w.mutable_data<float>());
    return w;
  }

  // Contract X [B, i_1, …, i_d] with one core at a time. Before step k the
  // state is T[B, i_k, (i_{k+1} … i_d, o_1 … o_{k−1}), r_{k−1}]; moving i_k next
  // to r_{k−1} makes the step one GEMM with the core reordered [i_k·r_{k−1}, o_k·r_k].
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    std::vector<float> t(xc.data<float>(), xc.data<float>() + batch * in());
    for (size_t k = 0; k < p_.cores(); ++k) {
      const int64_t ik = p_.i[k], ok = p_.o[k], r0 = p_.r[k], r1 = p_.r[k + 1];
      const int64_t rest = static_cast<int64_t>(t.size()) / (batch * ik * r0);
      const std::vector<float> moved = permute(t.data(), {batch, ik, rest, r0}, {0, 2, 1, 3});
      const std::vector<float> core =
          permute(factors()[k].tensor.data<float>(), {r0, ok, ik, r1}, {2, 0, 1, 3});
      t.assign(static_cast<size_t>(batch * rest * ok * r1), 0.0f);
      linalg::sgemm(false, false, batch * rest, ok * r1, ik * r0, 1.0f, moved.data(), ik * r0,
                    core.data(), ok * r1, 0.0f, t.data(), ok * r1);
    }
    return Tensor::from_f32({batch, out()}, t);
  }

  int64_t macs(int64_t batch) const override {
    int64_t total = 0;
    for (size_t k = 0; k < p_.cores(); ++k) {
      const int64_t rest = product(p_.i, k + 1, p_.cores()) * product(p_.o, 0, k);
      total += batch * rest * p_.i[k] * p_.r[k] * p_.o[k] * p_.r[k + 1];
    }
    return total;
  }

 private:
  TtPlan p_;
};

std::unique_ptr<Encoded> encode_tt(const Tensor& w, const SchemeParams& params) {
  const Tensor m = weight_matrix(w, "tt");
  TtPlan p = plan_tt(w.shape(), params);
  const size_t d = p.cores();
  // W [(o_1 … o_d), (i_1 … i_d)] → T [(o_1, i_1), …, (o_d, i_d)].
  std::vector<int64_t> dims(p.o);
  dims.insert(dims.end(), p.i.begin(), p.i.end());
  std::vector<int> perm;
  for (size_t k = 0; k < d; ++k) {
    perm.push_back(static_cast<int>(k));
    perm.push_back(static_cast<int>(d + k));
  }
  std::vector<float> c = permute(m.data<float>(), dims, perm);

  std::vector<Factor> cores;
  for (size_t k = 0; k + 1 < d; ++k) {
    const int64_t rows = p.r[k] * p.mode(k);
    const int64_t cols = static_cast<int64_t>(c.size()) / rows;
    // A large or thin (one side ≥ 4× the other) unfolding takes its SVD from
    // the Gram matrix of its smaller side (no copies of it; exact, not randomized).
    const bool thin = std::max(rows, cols) >= 4 * std::min(rows, cols);
    const linalg::Svd f = thin ? linalg::svd_gram(c.data(), rows, cols, p.r[k + 1])
                               : linalg::svd_leading(c.data(), rows, cols, p.r[k + 1], params.svd);
    cores.push_back(
        {fmt::format("G{}", k + 1), to_tensor(f.u, {p.r[k], p.o[k], p.i[k], p.r[k + 1]})});
    linalg::Matrix rest = f.vt;  // diag(σ)·Vᵀ [r_{k+1}, cols] carries on
    for (int64_t j = 0; j < rest.rows(); ++j) rest.row(j) *= f.s(j);
    c.assign(rest.data(), rest.data() + rest.size());
  }
  cores.push_back(
      {fmt::format("G{}", d), Tensor::from_f32({p.r[d - 1], p.o[d - 1], p.i[d - 1], 1}, c)});
  return std::make_unique<TtWeight>(std::move(p), std::move(cores));
}

}  // namespace

std::unique_ptr<Encoded> tt_from_factors(std::vector<Factor> cores) {
  TtPlan p;
  p.r.push_back(1);
  for (const Factor& c : cores) {
    p.o.push_back(c.tensor.dim(1));
    p.i.push_back(c.tensor.dim(2));
    p.r.push_back(c.tensor.dim(3));
  }
  return std::make_unique<TtWeight>(std::move(p), std::move(cores));
}

const SchemeTraits kTtTraits{
    .kind = SchemeKind::tt,
    .pattern = "tt",
    .reference = "TT-SVD (Oseledets 2011), TT-matrix layout (Novikov et al. 2015)",
    .label = [](const SchemeParams&) { return std::string("tt"); },
    .applicable =
        [](const Shape& s, const SchemeParams& p) {
          return is_weight_shape(s) && p.tt_cores >= 1 && p.tt_max_rank >= 0;
        },
    // 4·Σ_k r_{k−1}·(o_k·i_k)·r_k.
    .bytes = tt_bytes,
    .encode = encode_tt,
};

}  // namespace tailor::schemes::detail
