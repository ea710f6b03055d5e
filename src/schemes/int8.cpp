// `int8`: symmetric per-output-channel 8-bit quantization with f16 scales
// (DESIGN.md): L = 127, one scale per row.
#include "catalog.h"
#include "common.h"
#include "quantized.h"

namespace tailor::schemes::detail {

const SchemeTraits kInt8Traits{
    .kind = SchemeKind::int8,
    .pattern = "int8",
    .reference = "symmetric per-channel, round half away from zero, f16 scales (DESIGN.md)",
    .label = [](const SchemeParams&) { return std::string("int8"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    // ceil(numel·8/8) code bytes + 2·out (f16 scales).
    .bytes = [](const Shape& s, const SchemeParams&) { return quantized_bytes(s, 8, 0); },
    .encode = [](const Tensor& w,
                 const SchemeParams&) { return quantize_symmetric(w, "int8", 8, 0); },
};

}  // namespace tailor::schemes::detail
