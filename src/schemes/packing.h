// Bit packing shared by the encoders, decoders and kernels: a stream of
// fixed-width codes, LSB first (see kernels::PackedGemmArgs).
#pragma once

#include <cstdint>

namespace tailor::schemes::detail {

/// Bytes of `count` codes of `bits` bits: ceil(count·bits/8).
inline uint64_t packed_bytes(int64_t count, int bits) {
  return (static_cast<uint64_t>(count) * static_cast<uint64_t>(bits) + 7) / 8;
}

/// Writes the low `bits` bits of `value` as code `index` of a zero-initialised
/// stream (1 ≤ bits ≤ 8).
inline void put_code(uint8_t* stream, int64_t index, int bits, int32_t value) {
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  const uint32_t v = static_cast<uint32_t>(value) & ((1u << bits) - 1u);
  const uint32_t shifted = v << (bit % 8);
  stream[bit / 8] |= static_cast<uint8_t>(shifted);
  if ((bit % 8) + static_cast<uint64_t>(bits) > 8)
    stream[bit / 8 + 1] |= static_cast<uint8_t>(shifted >> 8);
}

/// Code `index` as an unsigned integer; `bytes` bounds the reads.
inline uint32_t get_ucode(const uint8_t* stream, uint64_t bytes, int64_t index, int bits) {
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  const uint64_t byte = bit / 8;
  uint32_t v = stream[byte];
  if (byte + 1 < bytes) v |= static_cast<uint32_t>(stream[byte + 1]) << 8;
  return (v >> (bit % 8)) & ((1u << bits) - 1u);
}

/// Code `index` as a two's-complement signed integer.
inline int32_t get_code(const uint8_t* stream, uint64_t bytes, int64_t index, int bits) {
  const uint32_t u = get_ucode(stream, bytes, index, bits);
  const uint32_t sign = 1u << (bits - 1);
  return static_cast<int32_t>(u ^ sign) - static_cast<int32_t>(sign);
}

}  // namespace tailor::schemes::detail
