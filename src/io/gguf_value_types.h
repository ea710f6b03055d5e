// GGUF metadata value type codes (GGUF version 3, ggml's docs/gguf.md: the
// gguf_type enumeration), shared by the reader (gguf.cpp) and the writer
// (gguf_write.cpp).
#pragma once

#include <cstdint>

namespace tailor::gguf_value {

enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

}  // namespace tailor::gguf_value
