// `ternary`: Ternary Weight Networks (Li & Liu, "Ternary Weight Networks",
// 2016) per output channel: threshold Δ_o = 0.7·mean_j |W_oj|, scale α_o =
// f16(mean of |W_oj| above Δ_o) (0 when none), Ŵ_oj = α_o·sign(W_oj) above Δ_o, else 0.
#include <fmt/format.h>

#include <cmath>

#include "catalog.h"
#include "common.h"
#include "packing.h"
#include "quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"

namespace tailor::schemes::detail {
namespace {

// Codes are 2-bit two's complement: 0 → 0, 1 → +1, 3 → −1.
std::unique_ptr<Encoded> encode_ternary(const Tensor& w, const SchemeParams&) {
  const Tensor m = weight_matrix(w, "ternary");
  const int64_t out = m.dim(0), in = m.dim(1);
  const float* p = m.data<float>();
  Tensor codes = Tensor::zeros(DType::u8, {static_cast<int64_t>(packed_bytes(out * in, 2))});
  Tensor scales = Tensor::zeros(DType::f16, {out});
  auto* stream = reinterpret_cast<uint8_t*>(codes.mutable_raw());
  uint16_t* s16 = scales.mutable_data<uint16_t>();
  for (int64_t o = 0; o < out; ++o) {
    const float* row = p + o * in;
    double sum = 0;
    for (int64_t j = 0; j < in; ++j) sum += std::abs(static_cast<double>(row[j]));
    const double delta = 0.7 * (sum / static_cast<double>(in));
    double kept_sum = 0;
    int64_t kept = 0;
    for (int64_t j = 0; j < in; ++j) {
      const double a = std::abs(static_cast<double>(row[j]));
      if (a > delta) {
        kept_sum += a;
        ++kept;
        put_code(stream, o * in + j, 2, row[j] > 0 ? 1 : -1);
      }
    }
    const float alpha = kept == 0 ? 0.0f : static_cast<float>(kept_sum / static_cast<double>(kept));
    if (!std::isfinite(round_to_f16(alpha)))
      throw Error("ternary", fmt::format("row {}: scale {} overflows f16", o, alpha));
    s16[o] = f32_to_f16(alpha);
  }
  return std::make_unique<QuantizedWeight>("ternary", out, in, 2, in, std::move(codes),
                                           std::move(scales));
}

}  // namespace

const SchemeTraits kTernaryTraits{
    .kind = SchemeKind::ternary,
    .pattern = "ternary",
    .reference = "Li & Liu, Ternary Weight Networks, 2016 (per output channel)",
    .label = [](const SchemeParams&) { return std::string("ternary"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    // ceil(numel·2/8) code bytes + 2·out (f16 α).
    .bytes = [](const Shape& s, const SchemeParams&) { return quantized_bytes(s, 2, 0); },
    .encode = encode_ternary,
};

}  // namespace tailor::schemes::detail
