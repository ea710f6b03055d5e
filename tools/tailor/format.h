// Number formatting shared by the CLI's tables.
#pragma once

#include <cstdint>
#include <string>

namespace tailor::cli {

/// 2690312 → "2,690,312" (no locale needed).
inline std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace tailor::cli
