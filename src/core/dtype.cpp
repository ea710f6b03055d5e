#include "tailor/core/dtype.h"

#include "tailor/core/onnx_dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "tailor/core/error.h"

namespace tailor {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 11> kNames{{{DType::f32, "f32"},
                                                                     {DType::f16, "f16"},
                                                                     {DType::bf16, "bf16"},
                                                                     {DType::f64, "f64"},
                                                                     {DType::i8, "i8"},
                                                                     {DType::u8, "u8"},
                                                                     {DType::i16, "i16"},
                                                                     {DType::u16, "u16"},
                                                                     {DType::i32, "i32"},
                                                                     {DType::i64, "i64"},
                                                                     {DType::boolean, "bool"}}};
}  // namespace

std::string_view dtype_name(DType t) {
  for (auto& [d, n] : kNames)
    if (d == t) return n;
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (auto& [d, n] : kNames)
    if (n == name) return d;
  return std::nullopt;
}

namespace {
/// ONNX TensorProto.DataType (onnx.proto): code = index, its name, and the
/// DType tailor reads it as (nullopt: none). Includes the types newer than
/// the libonnx tailor is built against, for messages.
struct OnnxType {
  std::string_view name;
  std::optional<DType> dtype;
};
constexpr std::array<OnnxType, 24> kOnnxTypes{{{"UNDEFINED", std::nullopt},
                                               {"FLOAT", DType::f32},
                                               {"UINT8", DType::u8},
                                               {"INT8", DType::i8},
                                               {"UINT16", DType::u16},
                                               {"INT16", DType::i16},
                                               {"INT32", DType::i32},
                                               {"INT64", DType::i64},
                                               {"STRING", std::nullopt},
                                               {"BOOL", DType::boolean},
                                               {"FLOAT16", DType::f16},
                                               {"DOUBLE", DType::f64},
                                               {"UINT32", std::nullopt},
                                               {"UINT64", std::nullopt},
                                               {"COMPLEX64", std::nullopt},
                                               {"COMPLEX128", std::nullopt},
                                               {"BFLOAT16", DType::bf16},
                                               {"FLOAT8E4M3FN", std::nullopt},
                                               {"FLOAT8E4M3FNUZ", std::nullopt},
                                               {"FLOAT8E5M2", std::nullopt},
                                               {"FLOAT8E5M2FNUZ", std::nullopt},
                                               {"UINT4", std::nullopt},
                                               {"INT4", std::nullopt},
                                               {"FLOAT4E2M1", std::nullopt}}};
}  // namespace

std::optional<DType> dtype_of_onnx(int64_t code) {
  if (code < 0 || code >= static_cast<int64_t>(kOnnxTypes.size())) return std::nullopt;
  return kOnnxTypes[static_cast<size_t>(code)].dtype;
}

int onnx_of_dtype(DType t) {
  for (size_t i = 0; i < kOnnxTypes.size(); ++i)
    if (kOnnxTypes[i].dtype == t) return static_cast<int>(i);
  return 0;
}

std::string_view onnx_type_name(int64_t code) {
  if (code < 0 || code >= static_cast<int64_t>(kOnnxTypes.size())) return "unknown";
  return kOnnxTypes[static_cast<size_t>(code)].name;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

uint16_t f32_to_f16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in f16: value = abs_f * 2^24 in units of 2^-24.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 + (127 - 15 ... ) : maps to 2^-24 units
    // value in 2^-24 units = mant * 2^(exp-127-23+24) = mant >> (126 - exp)
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits, nearest even.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: mant * 2^-24
      const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      bits = sign | std::bit_cast<uint32_t>(v);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_bf16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

namespace {

double load(const unsigned char* p, DType t) {
  switch (t) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::f16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f16_to_f32(v);
    }
    case DType::bf16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_f32(v);
    }
    case DType::i8:
      return static_cast<int8_t>(*p);
    case DType::u8:
      return *p;
    case DType::boolean:
      return *p ? 1.0 : 0.0;
    case DType::i16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::u16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
  }
  return 0;
}

template <class I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <class T>
void put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

void store(unsigned char* p, DType t, double v) {
  switch (t) {
    case DType::f32:
      return put(p, static_cast<float>(v));
    case DType::f64:
      return put(p, v);
    case DType::f16:
      return put(p, f32_to_f16(static_cast<float>(v)));
    case DType::bf16:
      return put(p, f32_to_bf16(static_cast<float>(v)));
    case DType::i8:
      return put(p, saturate<int8_t>(v));
    case DType::u8:
      return put(p, saturate<uint8_t>(v));
    case DType::boolean:
      return put(p, static_cast<uint8_t>(v != 0.0));
    case DType::i16:
      return put(p, saturate<int16_t>(v));
    case DType::u16:
      return put(p, saturate<uint16_t>(v));
    case DType::i32:
      return put(p, saturate<int32_t>(v));
    case DType::i64:
      return put(p, saturate<int64_t>(v));
  }
}

}  // namespace

void convert_elements(const void* src, DType from, void* dst, DType to, size_t n) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const size_t ss = dtype_size(from), ds = dtype_size(to);
  if (from == to) {
    std::memmove(d, s, n * ss);
    return;
  }
  // Fast paths for the conversions that move weights.
  if (to == DType::f32 && from == DType::f16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, s + 2 * i, 2);
      put(d + 4 * i, f16_to_f32(h));
    }
    return;
  }
  if (to == DType::f32 && from == DType::bf16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, s + 2 * i, 2);
      put(d + 4 * i, bf16_to_f32(h));
    }
    return;
  }
  if (from == DType::i64 && to == DType::i32) {
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, s + 8 * i, 8);
      put(d + 4 * i, v < INT32_MIN   ? INT32_MIN
                     : v > INT32_MAX ? INT32_MAX
                                     : static_cast<int32_t>(v));
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) store(d + i * ds, to, load(s + i * ss, from));
}

}  // namespace tailor
