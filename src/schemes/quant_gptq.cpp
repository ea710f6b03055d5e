// `int8-gptq`, `int4-gptq`, `int3-gptq`, `int4-g{G}-gptq`: GPTQ (Frantar,
// Ashkboos, Hoefler & Alistarh, "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers", ICLR 2023, Algorithm 1) in the
// reference quantizers' stored form (codes + f16 scales).
#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/error.h"

namespace tailor::schemes::detail {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::string gptq_label(const SchemeParams& p) {
  return fmt::format("{}-gptq", quantized_label(p.bits, p.group));
}

bool gram_fits(const Shape& s, const SchemeParams& p) {
  return p.gram && p.gram->in == matrix_dims(s).in &&
         p.gram->h.size() == static_cast<size_t>(p.gram->in * p.gram->in);
}

/// GPTQ of W [out, in] with H [in, in]. Scales: mse_scales of W, fixed before
/// the updates ("static groups"), so act-order keeps the stored group layout.
/// The columns (in act-order: by decreasing H_jj, stable) are quantized one
/// at a time: q = clamp(round_half_away(w/s), −L, L), the error
/// (w − q·s)/U_jj propagated to the later columns of the block through row j
/// of U, the upper Cholesky factor of (H + λI)⁻¹ (λ = damp·mean diag H, 1
/// when H = 0), and each block's errors to the columns after it in one product.
std::unique_ptr<Encoded> encode_gptq(const Tensor& w, const SchemeParams& p) {
  const std::string label = gptq_label(p);
  check(valid_bits_group(p), label, "bits must be 8, 4 or 3 (groups 32, 64, 128 with 4)");
  const Tensor m = weight_matrix(w, label);
  const int64_t out = m.dim(0), in = m.dim(1);
  check(
      gram_fits(m.shape(), p), label,
      fmt::format("needs the layer's calibration Gram XᵀX [{}, {}] (SchemeParams::gram)", in, in));
  check(p.damp >= 0 && std::isfinite(p.damp) && p.gptq_block >= 1, label,
        "damp must be finite and >= 0, the block >= 1");
  const float* pw = m.data<float>();
  const std::vector<float> scales = mse_scales(pw, out, in, p.bits, p.group, label);
  const int64_t group = p.group == 0 ? in : p.group;
  const int64_t groups = (in + group - 1) / group;
  const double limit = (1 << (p.bits - 1)) - 1;

  // In-place factorisations: two in×in double matrices at a time, not six
  // (gptq_memory_check: 336 MB above the inputs at 4,608 inputs, was 984).
  const Eigen::Map<const MatD> h(p.gram->h.data(), in, in);
  check(h.allFinite(), label, "the calibration Gram holds a non-finite value");
  std::vector<int64_t> perm(static_cast<size_t>(in));
  std::iota(perm.begin(), perm.end(), 0);
  if (p.act_order)
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h(a, a) > h(b, b); });
  MatD hp(in, in), wp(out, in);
  for (int64_t i = 0; i < in; ++i) {
    for (int64_t k = 0; k < in; ++k) hp(i, k) = h(perm[i], perm[k]);
    for (int64_t o = 0; o < out; ++o) wp(o, i) = pw[o * in + perm[i]];
  }
  const double mean_diag = hp.diagonal().mean();
  const double lambda = mean_diag > 0 ? p.damp * mean_diag : 1.0;
  hp.diagonal().array() += lambda;
  MatD u = MatD::Identity(in, in);  // (H + λI)⁻¹, then its upper Cholesky factor
  {
    Eigen::LLT<Eigen::Ref<MatD>> llt(hp);
    check(llt.info() == Eigen::Success, label, "H + λI is not positive definite");
    llt.solveInPlace(u);
  }
  hp.resize(0, 0);
  {
    Eigen::LLT<Eigen::Ref<MatD>> llt_inv(u);  // L in the lower triangle
    check(llt_inv.info() == Eigen::Success, label, "(H + λI)⁻¹ is not positive definite");
  }
  u.triangularView<Eigen::StrictlyUpper>() = u.transpose();  // U = Lᵀ
  u.triangularView<Eigen::StrictlyLower>().setZero();

  std::vector<int32_t> codes(static_cast<size_t>(out * in), 0);
  const int64_t block = p.gptq_block;
  for (int64_t i1 = 0; i1 < in; i1 += block) {
    const int64_t n = std::min(block, in - i1);
    MatD err(out, n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i1 + i, col = perm[static_cast<size_t>(c)];
      const double d = u(c, c);
      for (int64_t o = 0; o < out; ++o) {
        const double s = scales[static_cast<size_t>(o * groups + col / group)];
        const double x = wp(o, c);
        double q = 0;
        if (s != 0) {
          const double r = x / s;
          q = std::clamp(r < 0 ? -std::floor(-r + 0.5) : std::floor(r + 0.5), -limit, limit);
        }
        codes[static_cast<size_t>(o * in + col)] = static_cast<int32_t>(q);
        err(o, i) = (x - q * s) / d;
      }
      // W[:, c+1 : i1+n] −= err_i · U[c, c+1 : i1+n]
      const int64_t rest = n - i - 1;
      if (rest > 0)
        wp.block(0, c + 1, out, rest).noalias() -= err.col(i) * u.block(c, c + 1, 1, rest);
    }
    const int64_t after = in - i1 - n;
    if (after > 0) wp.rightCols(after).noalias() -= err * u.block(i1, i1 + n, n, after);
  }
  return pack_quantized(codes, out, in, label, p.bits, p.group, scales);
}

}  // namespace

const SchemeTraits kQuantGptqTraits{
    .kind = SchemeKind::quant_gptq,
    .pattern = "int{8,4,3}[-g{G}]-gptq",
    .reference =
        "GPTQ (Frantar et al., ICLR 2023): H = XᵀX of calibration inputs, 1% dampening, "
        "Cholesky of H⁻¹, lazy batch updates; scales from the -mse search",
    .label = gptq_label,
    .applicable =
        [](const Shape& s, const SchemeParams& p) {
          return is_weight_shape(s) && valid_bits_group(p) && gram_fits(s, p);
        },
    .bytes = [](const Shape& s,
                const SchemeParams& p) { return quantized_bytes(s, p.bits, p.group); },
    .encode = encode_gptq,
};

}  // namespace tailor::schemes::detail
