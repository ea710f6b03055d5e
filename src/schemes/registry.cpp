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

constexpr std::array<const SchemeTraits*, 18> kAll{
    &detail::kDenseTraits,        &detail::kInt8Traits,      &detail::kInt8A8Traits,
    &detail::kInt4Traits,         &detail::kInt3Traits,      &detail::kInt4GroupedTraits,
    &detail::kTernaryTraits,      &detail::kSparse24Traits,  &detail::kLowRankTraits,
    &detail::kMonarchTraits,      &detail::kTuckerTraits,    &detail::kTtTraits,
    &detail::kQuantMseTraits,     &detail::kQuantGptqTraits, &detail::kLowRankQuantTraits,
    &detail::kQuantLowRankTraits, &detail::kQ8_0Traits,      &detail::kQ4_0Traits};

/// Ranks of the quantized-weight + low-rank-correction composites.
constexpr std::array<int64_t, 3> kCorrectionRanks{8, 16, 32};

/// (bits, group) of the reference quantizer labelled `label`, false if none.
bool reference_quantizer(std::string_view label, int& bits, int64_t& group) {
  group = 0;
  if (label == "int8" || label == "int4" || label == "int3") {
    bits = label[3] - '0';
    return true;
  }
  bits = 4;
  return label.starts_with("int4-g") &&
         (label == "int4-g32" || label == "int4-g64" || label == "int4-g128") &&
         std::from_chars(label.data() + 6, label.data() + label.size(), group).ec == std::errc();
}

/// The (bits, group) variants of the data-aware quantizers.
constexpr std::array<std::pair<int, int64_t>, 6> kDataAwareForms{
    {{8, 0}, {4, 0}, {3, 0}, {4, 32}, {4, 64}, {4, 128}}};

// A positive decimal integer, the whole of `s`.
bool parse_positive(std::string_view s, int64_t& value) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value > 0;
}

std::string known_labels() {
  std::string out;
  for (const SchemeTraits* t : kAll) out += (out.empty() ? "" : ", ") + std::string(t->pattern);
  return out + " (G: 32, 64 or 128; R: a positive rank)";
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
  for (const auto& [suffix, traits] :
       {std::pair{std::string_view("-mse"), &detail::kQuantMseTraits},
        std::pair{std::string_view("-gptq"), &detail::kQuantGptqTraits}})
    if (label.ends_with(suffix) &&
        reference_quantizer(label.substr(0, label.size() - suffix.size()), p.bits, p.group))
      return Scheme(*traits, p);
  // lowrank-q{8,4}-r{R}
  if ((label.starts_with("lowrank-q8-r") || label.starts_with("lowrank-q4-r")) &&
      parse_positive(label.substr(12), p.rank)) {
    p.factor_bits = label[9] - '0';
    return Scheme(detail::kLowRankQuantTraits, p);
  }
  // int{4,3}+r{R}[-q8]
  if ((label.starts_with("int4+r") || label.starts_with("int3+r"))) {
    std::string_view rest = label.substr(6);
    p.factor_bits = 16;
    if (rest.ends_with("-q8")) {
      p.factor_bits = 8;
      rest.remove_suffix(3);
    }
    p.bits = label[3] - '0';
    if (parse_positive(rest, p.rank)) return Scheme(detail::kQuantLowRankTraits, p);
  }
  if (label.starts_with("int4-g") && parse_positive(label.substr(6), p.group) &&
      (p.group == 32 || p.group == 64 || p.group == 128))
    return Scheme(detail::kInt4GroupedTraits, p);
  throw Error(std::string(label),
              fmt::format("unknown compression scheme label; known: {}", known_labels()));
}

std::string stored_form(std::string_view label) {
  if (label == "int8-a8") return "int8";  // int8's stored weight; only its kernel differs
  for (std::string_view suffix : {"-mse", "-gptq"}) {
    int bits = 0;
    int64_t group = 0;
    const std::string_view base = label.substr(0, label.size() - suffix.size());
    if (label.ends_with(suffix) && reference_quantizer(base, bits, group)) return std::string(base);
  }
  return std::string(label);
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
      case SchemeKind::quant_mse:
      case SchemeKind::quant_gptq:
        for (const auto& [bits, group] : kDataAwareForms) {
          SchemeParams p = defaults;
          p.bits = bits;
          p.group = group;
          out.emplace_back(*t, p);
        }
        break;
      case SchemeKind::lowrank_quant:
        for (int64_t r : ranks)
          for (int fb : {8, 4}) {
            SchemeParams p = defaults;
            p.rank = r;
            p.factor_bits = fb;
            out.emplace_back(*t, p);
          }
        break;
      case SchemeKind::quant_lowrank:
        for (int bits : {4, 3})
          for (int64_t r : kCorrectionRanks)
            for (int fb : {16, 8}) {
              SchemeParams p = defaults;
              p.bits = bits;
              p.rank = r;
              p.factor_bits = fb;
              out.emplace_back(*t, p);
            }
        break;
      case SchemeKind::int8_a8:
        break;  // opt-in (named): the profile's weight error cannot see its activation rounding
      default:
        out.emplace_back(*t, defaults);
    }
  }
  std::erase_if(out, [&](const Scheme& s) { return !s.applicable(shape); });
  return out;
}

}  // namespace tailor::schemes
