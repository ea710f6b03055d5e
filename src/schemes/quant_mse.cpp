// `int8-mse`, `int4-mse`, `int3-mse`, `int4-g{G}-mse`: the reference
// quantizers' stored form (codes + f16 scales) with each row's or group's
// scale chosen to minimise the squared reconstruction error (MSE-optimal
// clipping, as llama.cpp's make_qx_quants searches its scales).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"

namespace tailor::schemes::detail {
namespace {

/// Σ_j (W_j − s·q_j)² over one group, q as quantize_with_scales rounds it,
/// in f32 as decode multiplies, summed in double; `codes` receives q.
double group_error(const float* w, int64_t n, float s, float limit, std::vector<float>& codes) {
  double e = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float q = s == 0 ? 0.0f : std::clamp(round_half_away(w[j] / s), -limit, limit);
    codes[static_cast<size_t>(j)] = q;
    const double d = static_cast<double>(w[j]) - static_cast<double>(q * s);
    e += d * d;
  }
  return e;
}

}  // namespace

std::vector<float> mse_scales(const float* p, int64_t out, int64_t in, int bits, int64_t group,
                              const std::string& label) {
  std::vector<float> scales = absmax_scales(p, out, in, bits, group, label);
  if (group == 0) group = in;
  const int64_t groups = (in + group - 1) / group;
  const auto limit = static_cast<float>((1 << (bits - 1)) - 1);
  std::vector<float> codes(static_cast<size_t>(group));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j0 = g * group, n = std::min(in, j0 + group) - j0;
      const float* w = p + o * in + j0;
      float max_abs = 0;
      for (int64_t j = 0; j < n; ++j) max_abs = std::max(max_abs, std::abs(w[j]));
      if (max_abs == 0) continue;  // the reference's s = 1 stores q = 0 exactly
      float& best = scales[static_cast<size_t>(o * groups + g)];
      double best_e = group_error(w, n, best, limit, codes);
      const auto consider = [&](float s) {
        if (!(s > 0) || !std::isfinite(s)) return;
        const double e = group_error(w, n, s, limit, codes);
        if (e < best_e) best_e = e, best = s;
      };
      for (int k = 0; k <= 30; ++k) consider(round_to_f16(max_abs * (0.5f + 0.02f * k) / limit));
      for (int refit = 0; refit < 2; ++refit) {
        group_error(w, n, best, limit, codes);
        double wq = 0, qq = 0;
        for (int64_t j = 0; j < n; ++j) {
          wq += static_cast<double>(w[j]) * codes[static_cast<size_t>(j)];
          qq += static_cast<double>(codes[static_cast<size_t>(j)]) * codes[static_cast<size_t>(j)];
        }
        if (qq > 0) consider(round_to_f16(static_cast<float>(wq / qq)));
      }
    }
  return scales;
}

bool valid_bits_group(const SchemeParams& p) {
  return (p.bits == 8 && p.group == 0) || (p.bits == 3 && p.group == 0) ||
         (p.bits == 4 && (p.group == 0 || p.group == 32 || p.group == 64 || p.group == 128));
}

namespace {

std::string mse_label(const SchemeParams& p) {
  return fmt::format("{}-mse", quantized_label(p.bits, p.group));
}

}  // namespace

std::string quantized_label(int bits, int64_t group) {
  return group == 0 ? fmt::format("int{}", bits) : fmt::format("int{}-g{}", bits, group);
}

const SchemeTraits kQuantMseTraits{
    .kind = SchemeKind::quant_mse,
    .pattern = "{int8,int4,int3,int4-g{G}}-mse",
    .reference =
        "the reference quantizer's stored form, per row/group f16 scale minimising the squared "
        "error over a clipping grid and least-squares refits (llama.cpp make_qx_quants)",
    .label = mse_label,
    .applicable = [](const Shape& s,
                     const SchemeParams& p) { return is_weight_shape(s) && valid_bits_group(p); },
    .bytes = [](const Shape& s,
                const SchemeParams& p) { return quantized_bytes(s, p.bits, p.group); },
    .encode =
        [](const Tensor& w, const SchemeParams& p) {
          const std::string label = mse_label(p);
          check(valid_bits_group(p), label, "bits must be 8, 4 or 3 (groups 32, 64, 128 with 4)");
          const Tensor m = weight_matrix(w, label);
          const float* d = m.data<float>();
          return quantize_with_scales(d, m.dim(0), m.dim(1), label, p.bits, p.group,
                                      mse_scales(d, m.dim(0), m.dim(1), p.bits, p.group, label));
        },
};

}  // namespace tailor::schemes::detail
