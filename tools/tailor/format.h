// Formatting shared by the CLI's tables and JSON output.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
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

/// `s` with control bytes written as \xHH, so a name from a file cannot move
/// the terminal's cursor or break a table row.
inline std::string printable(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  return out;
}

/// JSON text of `j` (indent < 0: one line); bytes that are not UTF-8 become
/// U+FFFD rather than an exception.
template <class J>
std::string dump(const J& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tailor::cli
