#include "tailor/schemes/registry.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <string>

#include "catalog.h"
#include "common.h"
#include "tailor/core/error.h"

namespace tailor::schemes {
namespace {

constexpr std::array<const SchemeTraits*, 12> kAll{
    &detail::kDenseTraits,   &detail::kInt8Traits,     &detail::kInt8A8Traits,
    &detail::kInt4Traits,    &detail::kInt3Traits,     &detail::kInt4GroupedTraits,
    &detail::kTernaryTraits, &detail::kSparse24Traits, &detail::kLowRankTraits,
    &detail::kMonarchTraits, &detail::kTuckerTraits,   &detail::kTtTraits};

// A positive decimal integer, the whole of `s`.
bool parse_positive(std::string_view s, int64_t& value) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value > 0;
}

std::string known_labels() {
  std::string out;
  for (const SchemeTraits* t : kAll) out += (out.empty() ? "" : ", ") + std::string(t->pattern);
  return out;
}

}  // namespace

std::span<const SchemeTraits* const> all_schemes() {
  return kAll;
}

const SchemeTraits& scheme_traits(SchemeKind kind) {
  for (const SchemeTraits* t : kAll)
    if (t->kind == kind) return *t;
  throw Error("schemes", fmt::format("no scheme of kind {}", static_cast<int>(kind)));
}

Scheme parse_scheme(std::string_view label, const SchemeParams& defaults) {
  SchemeParams p = defaults;
  for (const SchemeTraits* t : kAll)
    if (t->pattern == label) return Scheme(*t, p);
  if (label.starts_with("lowrank-r") && parse_positive(label.substr(9), p.rank))
    return Scheme(detail::kLowRankTraits, p);
  if (label.starts_with("int4-g") && parse_positive(label.substr(6), p.group) &&
      (p.group == 32 || p.group == 64 || p.group == 128))
    return Scheme(detail::kInt4GroupedTraits, p);
  throw Error(std::string(label),
              fmt::format("unknown compression scheme label; known: {}", known_labels()));
}

std::vector<int64_t> default_ranks(const Shape& shape) {
  const detail::MatrixDims d = detail::matrix_dims(shape);
  std::vector<int64_t> ranks;
  for (int64_t r = 8; r <= std::min(d.out, d.in) && r * (d.out + d.in) < d.out * d.in; r *= 2)
    ranks.push_back(r);
  return ranks;
}

std::vector<Scheme> applicable_schemes(const Shape& shape, std::span<const int64_t> ranks,
                                       const SchemeParams& defaults) {
  std::vector<Scheme> out;
  for (const SchemeTraits* t : kAll) {
    switch (t->kind) {
      case SchemeKind::int4_grouped:
        for (int64_t g : {32, 64, 128}) {
          SchemeParams p = defaults;
          p.group = g;
          out.emplace_back(*t, p);
        }
        break;
      case SchemeKind::lowrank:
        for (int64_t r : ranks) {
          SchemeParams p = defaults;
          p.rank = r;
          out.emplace_back(*t, p);
        }
        break;
      default:
        out.emplace_back(*t, defaults);
    }
  }
  std::erase_if(out, [&](const Scheme& s) { return !s.applicable(shape); });
  return out;
}

}  // namespace tailor::schemes
