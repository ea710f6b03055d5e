// `int8`: symmetric per-output-channel 8-bit quantization with f16 scales
// (DESIGN.md): L = 127, one scale per row. `int8-a8`: the same stored weight,
// multiplied with activations quantized to int8 per row at run time (W8A8,
// kernels::q8_q8_gemm_*): a candidate of its own, since activation rounding
// changes the outputs.
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

const SchemeTraits kInt8A8Traits{
    .kind = SchemeKind::int8_a8,
    .pattern = "int8-a8",
    .reference =
        "int8 weights (as int8) × int8 activations, s_x = max|x|/127 per row at run time "
        "(W8A8, LLM.int8()/SmoothQuant-style dynamic per-token quantization without outliers)",
    .label = [](const SchemeParams&) { return std::string("int8-a8"); },
    // Rows of X are pixels for a 1×1 conv kernel [out, in, 1, 1]; a k×k
    // kernel rounds each input pixel's channels with the pixel's own scale
    // (runtime::kernels::Q8Q8ConvParams). The profile drops it where a
    // weight's reader cannot round its input (graph::w8a8_reader).
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    .bytes = [](const Shape& s, const SchemeParams&) { return quantized_bytes(s, 8, 0); },
    .encode = [](const Tensor& w,
                 const SchemeParams&) { return quantize_symmetric(w, "int8-a8", 8, 0, true); },
};

}  // namespace tailor::schemes::detail
