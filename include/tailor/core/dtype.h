// Element types of tensors and conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tailor {

/// Element type. Sizes in bytes: f64 8; f32, i32 4; f16, bf16, i16, u16 2;
/// i8, u8, boolean 1; i64 8.
enum class DType : uint8_t { f32, f16, bf16, f64, i8, u8, i16, u16, i32, i64, boolean };

/// Bytes per element.
size_t dtype_size(DType t);
/// Lower-case name as tailor prints it: "f32", "f16", "bf16", "f64", "i8", "u8",
/// "i16", "u16", "i32", "i64", "bool".
std::string_view dtype_name(DType t);
/// Inverse of dtype_name; nullopt for an unknown name.
std::optional<DType> dtype_from_name(std::string_view name);
/// True for f32, f16, bf16, f64.
bool is_floating(DType t);

/// IEEE 754 binary16 from binary32, round to nearest even (overflow to ±inf,
/// NaN kept as a quiet NaN).
uint16_t f32_to_f16(float x);
/// IEEE 754 binary16 to binary32 (exact).
float f16_to_f32(uint16_t h);
/// bfloat16 (upper 16 bits of binary32) from binary32, round to nearest even.
uint16_t f32_to_bf16(float x);
/// bfloat16 to binary32 (exact).
float bf16_to_f32(uint16_t h);
/// x rounded to the nearest half-precision value, returned as f32 (DESIGN.md's f16(x)).
inline float round_to_f16(float x) {
  return f16_to_f32(f32_to_f16(x));
}

/// Converts `n` elements from `src` (type `from`) into `dst` (type `to`).
/// Float to integer conversions truncate toward zero and saturate at the
/// integer type's range (NaN becomes 0); to boolean: nonzero is true.
void convert_elements(const void* src, DType from, void* dst, DType to, size_t n);

}  // namespace tailor
