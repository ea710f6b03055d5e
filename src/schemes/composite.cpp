// Composite candidates (include/tailor/schemes/composite.h): low-rank factors
// stored quantized (`lowrank-q8-r{R}`, `lowrank-q4-r{R}`), and a quantized
// weight plus a low-rank correction of its residual (`int4+r{R}`, `int3+r{R}`
// with f16 factors, `…-q8` with int8 factors; LQER, Zhang et al. 2024, and
// CALDERA, Saha et al. 2024, without their activation weighting).
#include "tailor/schemes/composite.h"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <charconv>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/linalg/svd.h"

namespace tailor::schemes {
namespace detail {
namespace {

/// A matrix [rows, cols] stored as f16 (factor "w"), label "f16".
class F16Matrix final : public Encoded {
 public:
  explicit F16Matrix(const linalg::Matrix& m)
      : Encoded("f16", m.rows(), m.cols(), {{"w", half(m)}}) {}
  Tensor decode() const override { return factor("w").to(DType::f32).contiguous(); }
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    const Tensor w = decode();
    Tensor y = Tensor::zeros(DType::f32, {batch, out()});
    linalg::sgemm(false, true, batch, out(), in(), 1.0f, xc.data<float>(), in(), w.data<float>(),
                  in(), 0.0f, y.mutable_data<float>(), out());
    return y;
  }
  int64_t macs(int64_t batch) const override { return batch * out() * in(); }

 private:
  static Tensor half(const linalg::Matrix& m) {
    Tensor t = Tensor::zeros(DType::f16, {m.rows(), m.cols()});
    uint16_t* p = t.mutable_data<uint16_t>();
    for (int64_t i = 0; i < m.size(); ++i) p[i] = f32_to_f16(m.data()[i]);
    return t;
  }
};

/// Ŵ = base + a·b; factors: base's as they are, a's and b's prefixed "A." and "B.".
class CompositeWeight final : public Encoded {
 public:
  CompositeWeight(std::string label, CompositeParts parts)
      : Encoded(std::move(label), parts.a->out(), parts.b->in(), collect(parts)),
        parts_(std::move(parts)) {}
  const CompositeParts& parts() const { return parts_; }
  Tensor decode() const override {
    const Tensor a = parts_.a->decode(), b = parts_.b->decode();
    Tensor w =
        parts_.base ? parts_.base->decode().contiguous() : Tensor::zeros(DType::f32, {out(), in()});
    linalg::sgemm(false, false, out(), in(), a.dim(1), 1.0f, a.data<float>(), a.dim(1),
                  b.data<float>(), in(), 1.0f, w.mutable_data<float>(), in());
    return w;
  }
  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    Tensor y = parts_.a->matmul(parts_.b->matmul(xc));
    if (parts_.base) {
      const Tensor q = parts_.base->matmul(xc);
      float* py = y.mutable_data<float>();
      const float* pq = q.data<float>();
      for (int64_t i = 0; i < batch * out(); ++i) py[i] += pq[i];
    }
    return y;
  }
  int64_t macs(int64_t batch) const override {
    return (parts_.base ? parts_.base->macs(batch) : 0) + parts_.a->macs(batch) +
           parts_.b->macs(batch);
  }

 private:
  static std::vector<Factor> collect(const CompositeParts& p) {
    std::vector<Factor> f;
    if (p.base) f = p.base->factors();
    for (const auto& [prefix, part] : {std::pair{"A", p.a}, std::pair{"B", p.b}})
      for (const Factor& x : part->factors())
        f.push_back(
            {part->factors().size() == 1 ? prefix : prefix + std::string(".") + x.name, x.tensor});
    return f;
  }
  CompositeParts parts_;
};

/// Rows of `m` quantized to `bits` per row with -mse scales, as an Encoded.
std::shared_ptr<const Encoded> quantize_rows(const linalg::Matrix& m, int bits) {
  const std::string label = quantized_label(bits, 0) + "-mse";
  return quantize_with_scales(m.data(), m.rows(), m.cols(), label, bits, 0,
                              mse_scales(m.data(), m.rows(), m.cols(), bits, 0, label));
}

/// Factors of E ≈ A·B [out, in] at rank r, stored with `factor_bits` (16: f16;
/// 8 or 4: per-row quantized): B = √Σ·Vᵀ from the SVD, stored; then A the
/// least-squares fit E·B̂ᵀ(B̂·B̂ᵀ)⁻¹ to the stored B̂, stored.
void low_rank_factors(const linalg::Matrix& e, int64_t r, int factor_bits,
                      const linalg::SvdOptions& svd, CompositeParts& parts) {
  const linalg::Svd f = linalg::svd_truncated(e, r, svd);
  linalg::Matrix b = f.vt.topRows(r);
  for (int64_t k = 0; k < r; ++k) b.row(k) *= std::sqrt(f.s(k));
  parts.b = factor_bits == 16 ? std::shared_ptr<const Encoded>(std::make_shared<F16Matrix>(b))
                              : quantize_rows(b, factor_bits);
  const Tensor bt = parts.b->decode();
  const Eigen::Map<const linalg::Matrix> bh(bt.data<float>(), r, e.cols());
  Eigen::MatrixXd gram = (bh.cast<double>() * bh.cast<double>().transpose());
  gram.diagonal().array() += 1e-12 * std::max(1.0, gram.diagonal().maxCoeff());
  const Eigen::MatrixXd rhs = (e.cast<double>() * bh.cast<double>().transpose()).transpose();
  const linalg::Matrix a = gram.ldlt().solve(rhs).transpose().cast<float>();
  parts.a = factor_bits == 16 ? std::shared_ptr<const Encoded>(std::make_shared<F16Matrix>(a))
                              : quantize_rows(a, factor_bits);
}

bool rank_fits(const Shape& s, const SchemeParams& p) {
  const MatrixDims d = matrix_dims(s);
  return is_weight_shape(s) && p.rank >= 1 && p.rank < std::min(d.out, d.in);
}

std::string lrq_label(const SchemeParams& p) {
  return fmt::format("lowrank-q{}-r{}", p.factor_bits, p.rank);
}

std::string qlr_label(const SchemeParams& p) {
  return fmt::format("int{}+r{}{}", p.bits, p.rank, p.factor_bits == 8 ? "-q8" : "");
}

uint64_t factor_bytes(int64_t rows, int64_t cols, int factor_bits) {
  return factor_bits == 16 ? 2 * static_cast<uint64_t>(rows * cols)
                           : quantized_bytes({rows, cols}, factor_bits, 0);
}

bool lrq_valid(const SchemeParams& p) {
  return p.factor_bits == 8 || p.factor_bits == 4;
}
bool qlr_valid(const SchemeParams& p) {
  return (p.bits == 4 || p.bits == 3) && (p.factor_bits == 16 || p.factor_bits == 8);
}

}  // namespace

const SchemeTraits kLowRankQuantTraits{
    .kind = SchemeKind::lowrank_quant,
    .pattern = "lowrank-q{8,4}-r{R}",
    .reference =
        "truncated SVD, B = √Σ·Vᵀ quantized per row, A refitted by least squares to "
        "the stored B and quantized per row (-mse scales)",
    .label = lrq_label,
    .applicable = [](const Shape& s,
                     const SchemeParams& p) { return rank_fits(s, p) && lrq_valid(p); },
    .bytes =
        [](const Shape& s, const SchemeParams& p) {
          const MatrixDims d = matrix_dims(s);
          return factor_bytes(d.out, p.rank, p.factor_bits) +
                 factor_bytes(p.rank, d.in, p.factor_bits);
        },
    .encode = [](const Tensor& w, const SchemeParams& p) -> std::unique_ptr<Encoded> {
      const std::string label = lrq_label(p);
      const Tensor m = weight_matrix(w, label);
      check(rank_fits(m.shape(), p) && lrq_valid(p), label,
            fmt::format("needs factor bits 8 or 4 and 1 ≤ R < {}", std::min(m.dim(0), m.dim(1))));
      CompositeParts parts;
      low_rank_factors(to_matrix(m.data<float>(), m.dim(0), m.dim(1)), p.rank, p.factor_bits, p.svd,
                       parts);
      return std::make_unique<CompositeWeight>(label, std::move(parts));
    },
};

const SchemeTraits kQuantLowRankTraits{
    .kind = SchemeKind::quant_lowrank,
    .pattern = "int{4,3}+r{R}[-q8]",
    .reference =
        "Q = int{4,3}-mse of W, plus the rank-R factors of W − Q̂ (f16, or int8 per row "
        "with A refitted to the stored B) (LQER / CALDERA style)",
    .label = qlr_label,
    .applicable = [](const Shape& s,
                     const SchemeParams& p) { return rank_fits(s, p) && qlr_valid(p); },
    .bytes =
        [](const Shape& s, const SchemeParams& p) {
          const MatrixDims d = matrix_dims(s);
          return quantized_bytes(s, p.bits, 0) + factor_bytes(d.out, p.rank, p.factor_bits) +
                 factor_bytes(p.rank, d.in, p.factor_bits);
        },
    .encode = [](const Tensor& w, const SchemeParams& p) -> std::unique_ptr<Encoded> {
      const std::string label = qlr_label(p);
      const Tensor m = weight_matrix(w, label);
      const int64_t out = m.dim(0), in = m.dim(1);
      check(
          rank_fits(m.shape(), p) && qlr_valid(p), label,
          fmt::format("needs int4 or int3, f16 or int8 factors and 1 ≤ R < {}", std::min(out, in)));
      const float* pw = m.data<float>();
      const std::string qlabel = quantized_label(p.bits, 0) + "-mse";
      CompositeParts parts;
      parts.base = quantize_with_scales(pw, out, in, qlabel, p.bits, 0,
                                        mse_scales(pw, out, in, p.bits, 0, qlabel));
      const Tensor q = parts.base->decode();
      linalg::Matrix e = to_matrix(pw, out, in);
      e -= Eigen::Map<const linalg::Matrix>(q.data<float>(), out, in);
      low_rank_factors(e, p.rank, p.factor_bits, p.svd, parts);
      return std::make_unique<CompositeWeight>(label, std::move(parts));
    },
};

}  // namespace detail

std::optional<CompositeParts> composite_parts(const Encoded& e) {
  if (const auto* c = dynamic_cast<const detail::CompositeWeight*>(&e)) return c->parts();
  return std::nullopt;
}

}  // namespace tailor::schemes
