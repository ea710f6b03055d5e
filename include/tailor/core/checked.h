// Integer arithmetic that throws instead of wrapping: byte and MAC totals,
// sizes read from files.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include "tailor/core/error.h"

namespace tailor {

/// a + b, or throws Error(source, "<what> overflows <bits> bits") when the
/// sum does not fit in T (bits: T's width).
template <std::integral T>
T checked_add(T a, T b, const std::string& source, std::string_view what) {
  T r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(source,
                std::string(what) + " overflows " + std::to_string(8 * sizeof(T)) + " bits");
  return r;
}

/// a · b, or throws Error(source, "<what> overflows <bits> bits") when the
/// product does not fit in T.
template <std::integral T>
T checked_mul(T a, T b, const std::string& source, std::string_view what) {
  T r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(source,
                std::string(what) + " overflows " + std::to_string(8 * sizeof(T)) + " bits");
  return r;
}

}  // namespace tailor
