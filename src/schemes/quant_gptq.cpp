// `int8-gptq`, `int4-gptq`, `int3-gptq`, `int4-g{G}-gptq`: GPTQ (Frantar,
// Ashkboos, Hoefler & Alistarh, "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers", ICLR 2023, Algorithm 1) in the
// reference quantizers' stored form (codes + f16 scales), with least-squares
// scale refits in the calibration output metric after it.
#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/threads.h"

namespace tailor::schemes::detail {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Scale refits after GPTQ (encode_gptq): 2 took stories260K's uniform int4-gptq
/// from KL 0.0910 to 0.0811 and int4-g32-gptq from 0.0744 to 0.0650 (1 pass:
/// 0.0820, 0.0662; 4: 0.0816, 0.0649).
constexpr int kRefitPasses = 2;

std::string gptq_label(const SchemeParams& p) {
  return fmt::format("{}-gptq", quantized_label(p.bits, p.group));
}

bool gram_fits(const Shape& s, const SchemeParams& p) {
  return p.gram && p.gram->in == matrix_dims(s).in &&
         p.gram->h.size() == static_cast<size_t>(p.gram->in * p.gram->in);
}

/// One GPTQ pass (Algorithm 1) over W [out, in] (row-major `pw`) with fixed
/// scales [out, groups]: the columns, in `perm`'s order, are quantized one at a
/// time, q = clamp(round_half_away(w/s), −L, L), the error (w − q·s)/U_jj
/// propagated to the later columns of the block through row j of U (the upper
/// Cholesky factor of (H + λI)⁻¹ in `perm`'s order), and each block's errors to
/// the columns after it in one product. Returns the codes [out, in] in W's order.
std::vector<int32_t> gptq_pass(const float* pw, int64_t out, int64_t in, const MatD& u,
                               const std::vector<int64_t>& perm, const std::vector<float>& scales,
                               int64_t group, int bits, int64_t block) {
  const int64_t groups = (in + group - 1) / group;
  const double limit = (1 << (bits - 1)) - 1;
  MatD wp(out, in);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) wp(o, i) = pw[o * in + perm[static_cast<size_t>(i)]];
  std::vector<int32_t> codes(static_cast<size_t>(out * in), 0);
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
    if (after > 0)  // W[:, i1+n :] −= Err · U[i1 : i1+n, i1+n :]
      linalg::dgemm(false, false, out, after, n, -1.0, err.data(), n, u.data() + i1 * in + i1 + n,
                    in, 1.0, wp.data() + i1 + n, in);
  }
  return codes;
}

/// One row's share of the calibration output error for fixed codes, as a
/// quadratic in its scales s [groups]: e(s) = c − 2·bᵀs + sᵀA s with
/// A_gh = q_gᵀ H_gh q_h, b_g = q_gᵀ (H w)_g, c = wᵀ H w (q_g: the row's codes
/// in group g, H undamped), which is ‖X (w − ŵ)‖² over the calibration rows.
struct RowQuadratic {
  MatD a;
  Eigen::VectorXd b;
  double c = 0;
  double error(const std::vector<float>& s, int64_t offset) const {
    Eigen::VectorXd v(b.size());
    for (Eigen::Index g = 0; g < v.size(); ++g) v(g) = s[static_cast<size_t>(offset + g)];
    return c - 2 * b.dot(v) + v.dot(a * v);
  }
};

/// Every row's RowQuadratic for `codes` [out, in], given W (`pw`), H and
/// wh = W·H [out, in]; rows in chunks whose A's (groups² doubles a row) and
/// [rows, in] work matrices hold about 32 MB each.
template <class Visit>
void for_each_row_quadratic(const float* pw, int64_t out, int64_t in,
                            const Eigen::Ref<const MatD>& h, const MatD& wh,
                            const std::vector<int32_t>& codes, int64_t group, Visit visit) {
  const int64_t groups = (in + group - 1) / group;
  const int64_t chunk =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max(groups * groups, in), 1, out);
  for (int64_t o0 = 0; o0 < out; o0 += chunk) {
    const int64_t rows = std::min(chunk, out - o0);
    MatD q(rows, in);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < in; ++j) q(r, j) = codes[static_cast<size_t>((o0 + r) * in + j)];
    std::vector<RowQuadratic> rq(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      RowQuadratic& x = rq[static_cast<size_t>(r)];
      x.a = MatD::Zero(groups, groups);
      x.b.resize(groups);
      x.c = 0;
      for (int64_t j = 0; j < in; ++j) x.c += wh(o0 + r, j) * pw[(o0 + r) * in + j];
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t k0 = g * group, m = std::min(in, k0 + group) - k0;
        x.b(g) = q.row(r).segment(k0, m).dot(wh.row(o0 + r).segment(k0, m));
      }
    }
    for (int64_t g2 = 0; g2 < groups; ++g2) {
      const int64_t j0 = g2 * group, n = std::min(in, j0 + group) - j0;
      MatD p(rows, in);  // [rows, in]: Σ_{b∈g2} q_b H_ab
      linalg::dgemm(false, false, rows, in, n, 1.0, q.data() + j0, in,
                    h.data() + j0 * h.outerStride(), h.outerStride(), 0.0, p.data(), in);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g1 = 0; g1 < groups; ++g1) {
          const int64_t k0 = g1 * group, m = std::min(in, k0 + group) - k0;
          rq[static_cast<size_t>(r)].a(g1, g2) =
              q.row(r).segment(k0, m).dot(p.row(r).segment(k0, m));
        }
    }
    for (int64_t r = 0; r < rows; ++r) visit(o0 + r, rq[static_cast<size_t>(r)]);
  }
}

/// GPTQ of W [out, in] with H [in, in], then its scales refitted.
/// - Scales: mse_scales of W, fixed before the updates ("static groups"), so
///   act-order keeps the stored group layout.
/// - The columns (in act-order: by decreasing H_jj, stable) are quantized as
///   gptq_pass says, with λ = damp·mean diag H (1 when H = 0).
/// - Then kRefitPasses times: each row's scales are refitted to its codes by
///   least squares in the calibration output metric (RowQuadratic's normal
///   equations A s = b, rounded to f16), GPTQ runs again with those scales,
///   and each row keeps whichever of its codes and scales so far has the
///   least e(s). The stored form is unchanged (codes + f16 scales).
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
  // Serial products: the large ones (W·H, Q·H, the lazy batch updates) go to
  // OpenBLAS, which runs serially (linalg/threads.h); Eigen's parallel GEMM
  // would block a long inner dimension differently from its serial one, and
  // the refitted scales' f16 rounding would then depend on the thread count.
  const linalg::ThreadLimit serial(1);
  const float* pw = m.data<float>();
  const int64_t group = p.group == 0 ? in : p.group;
  const int64_t groups = (in + group - 1) / group;

  // One in×in double matrix factorised in place besides H (gptq_memory_check:
  // 254 MB above the inputs at 4,608 inputs; 336 MB with two, 984 with six).
  const Eigen::Map<const MatD> h(p.gram->h.data(), in, in);
  check(h.allFinite(), label, "the calibration Gram holds a non-finite value");
  std::vector<int64_t> perm(static_cast<size_t>(in));
  std::iota(perm.begin(), perm.end(), 0);
  if (p.act_order)
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h(a, a) > h(b, b); });
  // H + λI in perm's order, then in place the upper Cholesky factor U of its
  // inverse, (H + λI)⁻¹ = UᵀU (linalg::inverse_cholesky_upper).
  MatD u(in, in);
  for (int64_t i = 0; i < in; ++i)
    for (int64_t k = 0; k < in; ++k) u(i, k) = h(perm[i], perm[k]);
  const double mean_diag = u.diagonal().mean();
  u.diagonal().array() += mean_diag > 0 ? p.damp * mean_diag : 1.0;
  check(linalg::inverse_cholesky_upper(u.data(), in), label, "H + λI is not positive definite");

  std::vector<float> scales = mse_scales(pw, out, in, p.bits, p.group, label);
  std::vector<int32_t> codes = gptq_pass(pw, out, in, u, perm, scales, group, p.bits, p.gptq_block);
  MatD wh(out, in);  // W·H
  {
    const MatD w64 =
        Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            pw, out, in)
            .cast<double>();
    linalg::dgemm(false, false, out, in, in, 1.0, w64.data(), in, h.data(), in, 0.0, wh.data(), in);
  }
  // Per row: `best`, the least e(s) so far, of the kept codes and scales;
  // `next`, the scales the next GPTQ pass runs with: the least-squares refit
  // of the row's kept codes (the scales it ran with where that refit is
  // singular, or not finite and positive). keep() weighs candidate codes
  // under the scales they were made with, and refits a row whose codes it
  // kept; a row that keeps its codes keeps its refit, and a GPTQ pass with
  // the same scales would give it the same codes again.
  std::vector<double> best(static_cast<size_t>(out));
  std::vector<float> next = scales;
  const auto keep = [&](const std::vector<int32_t>& cand, const std::vector<float>& cand_scales,
                        bool first, bool refit) {
    for_each_row_quadratic(pw, out, in, h, wh, cand, group, [&](int64_t o, const RowQuadratic& x) {
      const auto so = static_cast<size_t>(o);
      const double e = x.error(cand_scales, o * groups);
      if (first) {
        best[so] = e;
      } else {
        if (!(e < best[so])) return;
        best[so] = e;
        std::copy(cand.begin() + o * in, cand.begin() + (o + 1) * in, codes.begin() + o * in);
        std::copy(cand_scales.begin() + o * groups, cand_scales.begin() + (o + 1) * groups,
                  scales.begin() + o * groups);
      }
      if (!refit) return;
      Eigen::LDLT<MatD> ldlt(x.a);
      if (ldlt.info() != Eigen::Success || !(x.a.diagonal().array() > 0).all()) return;
      const Eigen::VectorXd s = ldlt.solve(x.b);
      std::vector<float> r(static_cast<size_t>(groups));
      for (int64_t g = 0; g < groups; ++g) {
        r[static_cast<size_t>(g)] = round_to_f16(static_cast<float>(s(g)));
        if (!(r[static_cast<size_t>(g)] > 0) || !std::isfinite(r[static_cast<size_t>(g)])) return;
      }
      std::copy(r.begin(), r.end(), next.begin() + o * groups);
      const double er = x.error(next, o * groups);
      if (er < best[so]) {
        best[so] = er;
        std::copy(r.begin(), r.end(), scales.begin() + o * groups);
      }
    });
  };
  keep(codes, scales, true, true);
  for (int pass = 0; pass < kRefitPasses; ++pass) {
    const std::vector<float> ran = next;
    keep(gptq_pass(pw, out, in, u, perm, ran, group, p.bits, p.gptq_block), ran, false,
         pass + 1 < kRefitPasses);
  }
  return pack_quantized(codes, out, in, label, p.bits, p.group, scales);
}

}  // namespace

const SchemeTraits kQuantGptqTraits{
    .kind = SchemeKind::quant_gptq,
    .pattern = "{int8,int4,int3,int4-g{G}}-gptq",
    .reference =
        "GPTQ (Frantar et al., ICLR 2023): H = XᵀX of calibration inputs, 1% dampening, "
        "Cholesky of H⁻¹, lazy batch updates; scales from the -mse search, then twice refitted "
        "by least squares in ‖X(W − Ŵ)‖² with GPTQ run again",
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
