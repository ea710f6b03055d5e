// `int3`: symmetric per-output-channel 3-bit quantization with f16 scales
// (DESIGN.md): L = 3, one scale per row.
#include "catalog.h"
#include "common.h"
#include "quantized.h"

namespace tailor::schemes::detail {

const SchemeTraits kInt3Traits{
    .kind = SchemeKind::int3,
    .pattern = "int3",
    .reference = "symmetric per-channel, round half away from zero, f16 scales (DESIGN.md)",
    .label = [](const SchemeParams&) { return std::string("int3"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    // ceil(numel·3/8) code bytes + 2·out (f16 scales).
    .bytes = [](const Shape& s, const SchemeParams&) { return quantized_bytes(s, 3, 0); },
    .encode = [](const Tensor& w,
                 const SchemeParams&) { return quantize_symmetric(w, "int3", 3, 0); },
};

}  // namespace tailor::schemes::detail
