#include "tailor/plan/budget.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "tailor/core/error.h"

namespace tailor::plan {
namespace {

struct Unit {
  const char* name;
  Budget::Kind kind;
  double scale;
};

// Longest names first so "bpw" and "KiB" win over "B".
constexpr std::array<Unit, 12> kUnits{{{"bpw", Budget::Kind::bits_per_weight, 1},
                                       {"KiB", Budget::Kind::bytes, 0x1p10},
                                       {"MiB", Budget::Kind::bytes, 0x1p20},
                                       {"GiB", Budget::Kind::bytes, 0x1p30},
                                       {"TiB", Budget::Kind::bytes, 0x1p40},
                                       {"kB", Budget::Kind::bytes, 1e3},
                                       {"MB", Budget::Kind::bytes, 1e6},
                                       {"GB", Budget::Kind::bytes, 1e9},
                                       {"TB", Budget::Kind::bytes, 1e12},
                                       {"%", Budget::Kind::percent, 1},
                                       {"B", Budget::Kind::bytes, 1},
                                       {"", Budget::Kind::bytes, 1}}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error("--budget", "cannot read \"" + text + "\": " + why +
                              " (expected 25%, 4.5bpw, 300MB, 1.5GiB or a byte count)");
}

int64_t to_bytes(long double v, const std::string& text) {
  const long double floored = std::floor(v);
  if (!(floored < 0x1p63L)) bad(text, "more bytes than fit in 64 bits");
  return static_cast<int64_t>(floored);
}

}  // namespace

Budget parse_budget(const std::string& text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    bad(text, "hexadecimal numbers are not accepted; give a decimal number");
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range)
    bad(text, "the number is out of range (must be finite and > 0)");
  if (ec != std::errc() || end == s.data()) bad(text, "no number");
  std::string_view unit(end, s.data() + s.size() - end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (!std::isfinite(value) || value <= 0) bad(text, "the number must be finite and > 0");
  for (const Unit& u : kUnits) {
    if (!iequals(unit, u.name)) continue;
    Budget b;
    b.kind = u.kind;
    // "1.5" was read as 1 byte: a count of bytes is whole (1.5MB is not).
    if (u.kind == Budget::Kind::bytes && u.scale == 1 && value != std::floor(value))
      bad(text, "a byte count must be a whole number");
    b.value = u.kind == Budget::Kind::bytes ? value * u.scale : value;
    b.text = text;
    if (b.kind == Budget::Kind::bytes) to_bytes(b.value, text);
    return b;
  }
  bad(text, "unknown unit \"" + std::string(unit) + "\"");
}

int64_t budget_bytes(const Budget& budget, const ModelProfile& profile) {
  switch (budget.kind) {
    case Budget::Kind::percent:
      return to_bytes(static_cast<long double>(budget.value) * profile.dense_bytes / 100,
                      budget.text);
    case Budget::Kind::bits_per_weight: {
      long double numel = 0;
      for (const LayerProfile& l : profile.layers) numel += l.numel;
      return to_bytes(profile.fixed_bytes + static_cast<long double>(budget.value) * numel / 8,
                      budget.text);
    }
    case Budget::Kind::bytes:
      break;
  }
  return to_bytes(budget.value, budget.text);
}

}  // namespace tailor::plan
