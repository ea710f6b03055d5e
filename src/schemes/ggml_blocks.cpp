// `q8_0` and `q4_0`: ggml's block formats (tailor/schemes/ggml_blocks.h has
// the definitions), encoded as ggml's reference quantizers encode them and
// stored in the packed-integer form with one f16 scale per block of 32.
#include "tailor/schemes/ggml_blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"

namespace tailor::schemes {
namespace detail {
namespace {

bool rows_fit(const Shape& s) {
  return is_weight_shape(s) && matrix_dims(s).in % kGgmlBlock == 0;
}

uint64_t block_bytes(const Shape& s, int64_t per_block) {
  const MatrixDims d = matrix_dims(s);
  return static_cast<uint64_t>(d.out * (d.in / kGgmlBlock) * per_block);
}

/// The f16 scale of one block; an overflow is an error naming the label.
float stored_scale(float d, const std::string& label, int64_t row, int64_t block) {
  const float s = round_to_f16(d);
  if (!std::isfinite(s))
    throw Error(label, fmt::format("row {} block {}: scale {} overflows f16", row, block, d));
  return s;
}

/// Codes and scales of W [out, in] (in % 32 == 0), block by block along each
/// row: `block(x, codes)` reads the 32 weights x and writes their 32 codes,
/// returning the block's scale d (before its f16 rounding).
template <typename Block>
std::unique_ptr<Encoded> encode_blocks(const Tensor& w, const std::string& label, int bits,
                                       Block block) {
  const Tensor m = weight_matrix(w, label);
  const int64_t out = m.dim(0), in = m.dim(1), blocks = in / kGgmlBlock;
  check(in % kGgmlBlock == 0, label, ggml_block_note(m.shape()));
  const float* p = m.data<float>();
  std::vector<int32_t> q(static_cast<size_t>(out * in));
  std::vector<float> scales(static_cast<size_t>(out * blocks));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t at = o * in + b * kGgmlBlock;
      const float d = block(p + at, q.data() + at);
      scales[static_cast<size_t>(o * blocks + b)] = stored_scale(d, label, o, b);
    }
  return pack_quantized(q, out, in, label, bits, kGgmlBlock, scales);
}

/// quantize_row_q8_0_ref's codes and scales.
std::unique_ptr<Encoded> encode_q8_0(const Tensor& w) {
  return encode_blocks(w, "q8_0", 8, [](const float* x, int32_t* codes) {
    float amax = 0;
    for (int64_t j = 0; j < kGgmlBlock; ++j) amax = std::max(amax, std::abs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int64_t j = 0; j < kGgmlBlock; ++j)
      codes[j] = static_cast<int32_t>(std::round(x[j] * id));  // half away from zero, as roundf
    return d;
  });
}

/// quantize_row_q4_0_ref's codes (c − 8, in −8..7) and scales.
std::unique_ptr<Encoded> encode_q4_0(const Tensor& w) {
  return encode_blocks(w, "q4_0", 4, [](const float* x, int32_t* codes) {
    float amax = 0, max = 0;
    for (int64_t j = 0; j < kGgmlBlock; ++j)
      if (amax < std::abs(x[j])) {  // strictly larger: the first on ties
        amax = std::abs(x[j]);
        max = x[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int64_t j = 0; j < kGgmlBlock; ++j) {
      // Two roundings, as ggml's source reads (no fused multiply-add): the
      // product stored first. In [0.5, 16.5], so truncation is floor.
      volatile float scaled = x[j] * id;
      const float v = scaled + 8.5f;
      codes[j] = std::min(15, static_cast<int32_t>(v)) - 8;
    }
    return d;
  });
}

}  // namespace

const SchemeTraits kQ8_0Traits{
    .kind = SchemeKind::q8_0,
    .pattern = "q8_0",
    .reference =
        "ggml q8_0 (ggml-quants.c quantize_row_q8_0_ref): blocks of 32 along the row, "
        "d = max|x|/127, q = roundf(x/d), f16 d; 34 bytes per block",
    .label = [](const SchemeParams&) { return std::string("q8_0"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return rows_fit(s); },
    // 34 bytes per block of 32: 32 int8 codes + an f16 scale (8.5 bits per weight).
    .bytes = [](const Shape& s, const SchemeParams&) { return block_bytes(s, 34); },
    .encode = [](const Tensor& w, const SchemeParams&) { return encode_q8_0(w); },
};

const SchemeTraits kQ4_0Traits{
    .kind = SchemeKind::q4_0,
    .pattern = "q4_0",
    .reference =
        "ggml q4_0 (ggml-quants.c quantize_row_q4_0_ref): blocks of 32 along the row, "
        "d = (signed max-magnitude value)/-8, c = min(15, trunc(x/d + 8.5)), f16 d; 18 bytes "
        "per block",
    .label = [](const SchemeParams&) { return std::string("q4_0"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return rows_fit(s); },
    // 18 bytes per block of 32: 16 bytes of 4-bit codes + an f16 scale (4.5 bits per weight).
    .bytes = [](const Shape& s, const SchemeParams&) { return block_bytes(s, 18); },
    .encode = [](const Tensor& w, const SchemeParams&) { return encode_q4_0(w); },
};

}  // namespace detail

bool is_ggml_block_label(std::string_view label) {
  return label == "q8_0" || label == "q4_0";
}

int64_t ggml_block_bytes(std::string_view label) {
  if (label == "q8_0") return 34;
  if (label == "q4_0") return 18;
  throw Error(std::string(label), "not a ggml block format (q8_0, q4_0)");
}

std::string ggml_block_note(const Shape& shape) {
  if (!detail::is_weight_shape(shape)) return "";
  const int64_t in = detail::matrix_dims(shape).in;
  if (in % kGgmlBlock == 0) return "";
  return fmt::format("q8_0, q4_0: row length {} is not a multiple of ggml's block of {}", in,
                     kGgmlBlock);
}

std::vector<uint8_t> to_ggml_blocks(const Encoded& e) {
  const std::string& label = e.label();
  const int64_t per_block = ggml_block_bytes(label);
  check(e.in() % kGgmlBlock == 0, label,
        fmt::format("row length {} is not a multiple of 32", e.in()));
  const int64_t blocks = e.out() * e.in() / kGgmlBlock;
  const Tensor& q = e.factor("q");
  const Tensor& s = e.factor("scale");
  check(s.dtype() == DType::f16 && s.numel() == blocks, label, "scales are not one f16 per block");
  const uint16_t* d = s.data<uint16_t>();
  const auto* codes = reinterpret_cast<const uint8_t*>(q.raw());
  std::vector<uint8_t> out(static_cast<size_t>(blocks * per_block));
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* blk = out.data() + b * per_block;
    std::memcpy(blk, &d[b], 2);  // little-endian f16, as ggml_fp16_t
    if (label == "q8_0") {
      check(q.nbytes() == static_cast<size_t>(blocks * kGgmlBlock), label, "codes are not int8");
      std::memcpy(blk + 2, codes + b * kGgmlBlock, kGgmlBlock);
    } else {
      // Tailor's stream: element 2t in the low nibble of byte t, two's complement.
      // ggml's block: c_t (t < 16) low nibble of byte t, c_{t+16} its high nibble, c = q + 8.
      const uint8_t* src = codes + b * kGgmlBlock / 2;
      auto code = [&](int64_t j) {
        const uint8_t nib = (src[j / 2] >> (4 * (j % 2))) & 0xF;
        return static_cast<uint8_t>((nib ^ 0x8));  // two's complement q → q + 8
      };
      for (int64_t t = 0; t < 16; ++t)
        blk[2 + t] = static_cast<uint8_t>(code(t) | (code(t + 16) << 4));
    }
  }
  return out;
}

std::unique_ptr<Encoded> from_ggml_blocks(std::string_view label_view, int64_t out, int64_t in,
                                          const uint8_t* data, uint64_t nbytes) {
  const std::string label(label_view);
  const int64_t per_block = ggml_block_bytes(label);
  check(out > 0 && in > 0 && in % kGgmlBlock == 0, label,
        fmt::format("[{}, {}] does not hold whole blocks of 32 along its rows", out, in));
  const int64_t blocks = out * in / kGgmlBlock;
  check(nbytes == static_cast<uint64_t>(blocks * per_block), label,
        fmt::format("{} bytes do not hold {} blocks of {} bytes", nbytes, blocks, per_block));
  std::vector<int32_t> q(static_cast<size_t>(out * in));
  std::vector<float> scales(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = data + b * per_block;
    uint16_t d = 0;
    std::memcpy(&d, blk, 2);
    scales[static_cast<size_t>(b)] = f16_to_f32(d);
    int32_t* qb = q.data() + b * kGgmlBlock;
    if (label == "q8_0") {
      for (int64_t j = 0; j < kGgmlBlock; ++j) qb[j] = static_cast<int8_t>(blk[2 + j]);
    } else {
      for (int64_t t = 0; t < 16; ++t) {
        qb[t] = (blk[2 + t] & 0xF) - 8;
        qb[t + 16] = (blk[2 + t] >> 4) - 8;
      }
    }
  }
  return detail::pack_quantized(q, out, in, label, label == "q8_0" ? 8 : 4, kGgmlBlock, scales);
}

}  // namespace tailor::schemes
