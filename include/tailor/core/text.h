// Small text helpers shared by messages and tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tailor {

/// `s` with control bytes (below 0x20, and 0x7f) written as \xHH and cut to
/// `max_bytes` bytes of output ("..." appended when cut), so text taken from a
/// file can neither break a line nor move a terminal's cursor.
std::string escape_control(std::string_view s, size_t max_bytes = SIZE_MAX);

/// 2690312 → "2,690,312" (no locale involved).
std::string with_commas(int64_t v);

}  // namespace tailor
