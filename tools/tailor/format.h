// Formatting shared by the CLI's tables and JSON output.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace tailor::cli
