// The stored form shared by the integer and ternary quantizers: a bitstream of
// two's-complement codes and one f16 scale per group of inputs of each row.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tailor/schemes/kernels.h"
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
  /// schemes::matmul_into's fast path: the kernel writes Y straight into y.
  void matmul_into(const float* x, int64_t batch, float* y) const;
  int64_t macs(int64_t batch) const override { return batch * out() * in(); }
  /// The packed kernels' view of the codes (x, batch, y empty).
  kernels::PackedGemmArgs packed_args() const;
  int bits() const { return bits_; }
  bool act8() const { return act8_; }

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

/// The reference scales of quantize_symmetric, row-major [out, groups]
/// (groups = ceil(in/group), group 0: one per row): f16(max abs / L), 1 for an
/// all-zero group. `w` is [out, in] f32. Throws tailor::Error naming `label`
/// when a scale overflows f16.
std::vector<float> absmax_scales(const float* w, int64_t out, int64_t in, int bits, int64_t group,
                                 const std::string& label);

/// MSE-optimal clipping: per row and group, the f16 scale s minimising
/// Σ_j (W_j − s·clamp(round_half_away(W_j/s), −L, L))² among the reference
/// scale f16(m/L) (m = max abs), the grid f16(α·m/L) for α = 0.50, 0.52, …,
/// 1.10, and two least-squares refits s ← f16(Σ W_j·q_j / Σ q_j²) of the best
/// one's codes (llama.cpp's make_qx_quants does the same search). Ties keep
/// the earlier candidate, the reference first, so each group's error is at
/// most the reference's. Layout and errors as absmax_scales.
std::vector<float> mse_scales(const float* w, int64_t out, int64_t in, int bits, int64_t group,
                              const std::string& label);

/// The stored form of W [out, in] (f32, row-major) with the given stored
/// scales [out, groups] (each already an f16 value): q = clamp(round_half_away(W/s), −L, L),
/// q = 0 where s = 0. group 0: one scale per row (factor "scale" f16 [out]).
std::unique_ptr<Encoded> quantize_with_scales(const float* w, int64_t out, int64_t in,
                                              const std::string& label, int bits, int64_t group,
                                              const std::vector<float>& scales);

/// The stored form from integer codes [out, in] (|q| ≤ L) and stored scales
/// [out, groups], as quantize_with_scales lays them out.
std::unique_ptr<Encoded> pack_quantized(const std::vector<int32_t>& codes, int64_t out, int64_t in,
                                        const std::string& label, int bits, int64_t group,
                                        const std::vector<float>& scales);

/// The reference label of (bits, group): "int{bits}", or "int{bits}-g{group}".
std::string quantized_label(int bits, int64_t group);

/// Whether params.bits and params.group name a reference quantizer's form:
/// int8, int4, int3 per channel (group 0) or int4-g{32, 64, 128}.
bool valid_bits_group(const SchemeParams& params);

/// Bytes of the symmetric quantizers' stored form: ceil(out·in·bits/8) codes plus
/// 2 bytes per f16 scale, out·ceil(in/group) scales (group 0: one per row).
uint64_t quantized_bytes(const Shape& shape, int bits, int64_t group);

/// round_half_away(x) = sign(x)·floor(abs(x) + 0.5) (DESIGN.md), in f32 as written.
inline float round_half_away(float x) {
  return x < 0 ? -std::floor(-x + 0.5f) : std::floor(x + 0.5f);
}

}  // namespace tailor::schemes::detail
