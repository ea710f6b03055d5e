// ggml's block formats as catalog schemes: `q8_0` and `q4_0`, defined as
// ggml's scalar reference quantizers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref in ggml-quants.c, what llama-quantize runs without an
// importance matrix) define them, so the error and bytes tailor measures are
// those of the GGUF file llama.cpp reads. Blocks of 32 consecutive inputs of a
// row, one f16 scale d per block:
//
//   q8_0 (34 bytes per block, 8.5 bits per weight): amax = max |x|,
//     d = amax / 127 in f32, q_j = roundf(x_j · (1/d)) (0 when d = 0; half
//     away from zero), stored f16(d) and 32 int8 codes; x̂_j = q_j · f16(d).
//   q4_0 (18 bytes per block, 4.5 bits per weight): m = the signed value of
//     largest |x| (the first such on ties), d = m / −8 in f32,
//     c_j = min(15, trunc(x_j · (1/d) + 8.5)) in 0..15 (8 when d = 0), stored
//     f16(d) and 16 bytes, byte t = c_t | c_{t+16} << 4; x̂_j = (c_j − 8) · f16(d).
//
// Quantization uses the unrounded f32 d (through 1/d), dequantization the f16
// one, exactly as ggml does. In tailor both are stored as the packed-integer
// form with f16 scales per group of 32 (schemes::detail::QuantizedWeight:
// codes q_j, or c_j − 8 for q4_0), so they run on the packed q8/q4 kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// ggml's block length (elements along a row) of q8_0 and q4_0.
inline constexpr int64_t kGgmlBlock = 32;

/// Whether `label` is one of ggml's block formats ("q8_0", "q4_0").
bool is_ggml_block_label(std::string_view label);

/// Bytes of one ggml block of `label` (34 for q8_0, 18 for q4_0). Throws
/// tailor::Error for any other label.
int64_t ggml_block_bytes(std::string_view label);

/// Why a weight of `shape` (viewed [out, in]) gets no ggml block candidate:
/// "q8_0, q4_0: row length N is not a multiple of ggml's block of 32"; empty
/// when in is a multiple of 32 (or the shape is no matrix).
std::string ggml_block_note(const Shape& shape);

/// The ggml blocks of a q8_0 or q4_0 weight (row-major: row o's in/32 blocks,
/// then row o+1's), byte for byte as a GGUF tensor of that type stores them
/// (ne = [in, out]). Throws tailor::Error naming the label when `e` is not a
/// q8_0 / q4_0 weight.
std::vector<uint8_t> to_ggml_blocks(const Encoded& e);

/// The q8_0 / q4_0 weight [out, in] held in ggml blocks (as to_ggml_blocks
/// lays them out). Throws tailor::Error naming the label for another label,
/// in not a multiple of 32, or a byte count that is not out·in/32 blocks.
std::unique_ptr<Encoded> from_ggml_blocks(std::string_view label, int64_t out, int64_t in,
                                          const uint8_t* data, uint64_t nbytes);

}  // namespace tailor::schemes
