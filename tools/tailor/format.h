// Formatting shared by the CLI's tables and JSON output.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/text.h"

namespace tailor::cli {

using tailor::with_commas;

/// `s` with control bytes written as \xHH, so a name from a file cannot move
/// the terminal's cursor or break a table row.
inline std::string printable(const std::string& s) {
  return escape_control(s);
}

/// JSON text of `j` (indent < 0: one line); bytes that are not UTF-8 become
/// U+FFFD rather than an exception.
template <class J>
std::string dump(const J& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Dims of an `--input-shape` spec: "1x3x48x320" → {1, 3, 48, 320}. Throws
/// tailor::Error naming --input-shape, the whole `spec` and the `form`
/// expected, for an empty, non-numeric or non-positive dim.
inline std::vector<int64_t> parse_input_dims(const std::string& dims, const std::string& spec,
                                             const std::string& form) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= dims.size()) {
    const size_t x = dims.find('x', start);
    const std::string part =
        dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    try {
      size_t used = 0;
      const long long v = std::stoll(part, &used);
      if (used != part.size() || v < 1) throw std::invalid_argument("dim");
      out.push_back(v);
    } catch (const std::exception&) {
      throw Error("--input-shape",
                  "expected " + form + ", positive dims, got \"" + printable(spec) + "\"");
    }
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return out;
}

}  // namespace tailor::cli
