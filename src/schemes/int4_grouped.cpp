// `int4-g{G}`: symmetric 4-bit quantization with one f16 scale per group of G
// consecutive inputs of a row (G = 32, 64, 128; the last group may be shorter).
#include <fmt/format.h>

#include "catalog.h"
#include "common.h"
#include "quantized.h"
#include "tailor/core/error.h"

namespace tailor::schemes::detail {
namespace {

bool valid_group(int64_t g) {
  return g == 32 || g == 64 || g == 128;
}

}  // namespace

const SchemeTraits kInt4GroupedTraits{
    .kind = SchemeKind::int4_grouped,
    .pattern = "int4-g{G}",
    .reference =
        "symmetric per group of G inputs, round half away from zero, f16 scales "
        "(DESIGN.md)",
    .label = [](const SchemeParams& p) { return fmt::format("int4-g{}", p.group); },
    .applicable = [](const Shape& s,
                     const SchemeParams& p) { return is_weight_shape(s) && valid_group(p.group); },
    // ceil(numel·4/8) code bytes + 2·out·ceil(in/G) (f16 scales).
    .bytes = [](const Shape& s, const SchemeParams& p) { return quantized_bytes(s, 4, p.group); },
    .encode =
        [](const Tensor& w, const SchemeParams& p) {
          const std::string label = fmt::format("int4-g{}", p.group);
          check(valid_group(p.group), label, "group size must be 32, 64 or 128");
          return quantize_symmetric(w, label, 4, p.group);
        },
};

}  // namespace tailor::schemes::detail
