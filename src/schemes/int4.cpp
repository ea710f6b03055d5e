// `int4`: symmetric per-output-channel 4-bit quantization with f16 scales
// (DESIGN.md): L = 7, one scale per row.
#include "catalog.h"
#include "common.h"
#include "quantized.h"

namespace tailor::schemes::detail {

const SchemeTraits kInt4Traits{
    .kind = SchemeKind::int4,
    .pattern = "int4",
    .reference = "symmetric per-channel, round half away from zero, f16 scales (DESIGN.md)",
    .label = [](const SchemeParams&) { return std::string("int4"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    // ceil(numel·4/8) code bytes + 2·out (f16 scales).
    .bytes = [](const Shape& s, const SchemeParams&) { return quantized_bytes(s, 4, 0); },
    .encode = [](const Tensor& w,
                 const SchemeParams&) { return quantize_symmetric(w, "int4", 4, 0); },
};

}  // namespace tailor::schemes::detail
