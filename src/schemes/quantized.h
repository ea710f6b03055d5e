// The stored form shared by the integer and ternary quantizers: a bitstream of
// two's-complement codes and one f16 scale per group of inputs of each row.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes::detail {

/// Ŵ[o, j] = q[o·in + j]·scale[o, j/group]. Factors: "q" (int8: i8 [out, in];
/// fewer bits: u8 [ceil(out·in·bits/8)], packed as in kernels::PackedGemmArgs)
/// and "scale" (f16 [out] per channel, f16 [out, ceil(in/group)] grouped).
/// With `act8` (int8 per channel only: the scheme int8-a8) matmul quantizes
/// each row of X to int8 as well (kernels::q8_q8_gemm_ref's definition);
/// decode() is Ŵ either way, the stored weight being the same.
class QuantizedWeight final : public Encoded {
 public:
  QuantizedWeight(std::string label, int64_t out, int64_t in, int bits, int64_t group, Tensor codes,
                  Tensor scales, bool act8 = false);
  Tensor decode() const override;
  Tensor matmul(const Tensor& x) const override;
  int64_t macs(int64_t batch) const override { return batch * out() * in(); }

 private:
  int bits_;
  int64_t group_;
  bool act8_;
};

/// Symmetric quantization to `bits` bits per code (DESIGN.md): for each row and
/// group of `group` inputs (the last may be shorter; group 0: the whole row,
/// per output channel, with scales [out] instead of [out, ceil(in/group)]), L = 2^(bits−1) − 1,
/// s = f16(max abs / L) (1 for an all-zero group), q = clamp(round_half_away(w/s), −L, L).
/// A nonzero group whose scale rounds to 0 in f16 stores q = 0. Throws
/// tailor::Error naming `label` when a scale overflows f16. `act8`: see
/// QuantizedWeight (bits 8 and group 0 only).
std::unique_ptr<Encoded> quantize_symmetric(const Tensor& w, const std::string& label, int bits,
                                            int64_t group, bool act8 = false);

/// Bytes of the symmetric quantizers' stored form: ceil(out·in·bits/8) codes plus
/// 2 bytes per f16 scale, out·ceil(in/group) scales (group 0: one per row).
uint64_t quantized_bytes(const Shape& shape, int bits, int64_t group);

/// round_half_away(x) = sign(x)·floor(abs(x) + 0.5) (DESIGN.md), in f32 as written.
inline float round_half_away(float x) {
  return x < 0 ? -std::floor(-x + 0.5f) : std::floor(x + 0.5f);
}

}  // namespace tailor::schemes::detail
