// GGUF (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), versions 2 and 3.
#pragma once

#include <string>

#include "tailor/graph/graph.h"

namespace tailor {

/// Reads a GGUF file (versions 2 and 3, little-endian) by mapping it. F32,
/// F16 and BF16 tensors become zero-copy views of the mapping (owned copies
/// where the data is not aligned for the element type, possible only with
/// general.alignment 1 or 2), with shape reversed from ggml's ne order, so a
/// matrix with ne = [in, out] is stored [out, in]. A weights-only
/// graph::Model: one initializer per tensor in tensor-info order, no nodes,
/// weight_convention out_in (graph::weights: rank ≥ 2 out_in, rank < 2
/// none). Metadata keys with string,
/// integer, float or bool values go to Model::metadata as text (floats in
/// shortest round-trip form, bools "true"/"false"); arrays are summarised as
/// "[array of N]". The data section starts at the first multiple of
/// general.alignment (uint32, a power of two, default 32) after the tensor
/// infos; format is "gguf".
/// Throws Error naming the file (one line) for a bad magic, version 1 or any
/// other unsupported version (big-endian files included), counts or string
/// lengths that cannot fit in the bytes remaining (checked before anything is
/// allocated for them), an unknown metadata value type, arrays nested deeper than 8,
/// duplicate keys or tensor names, more than 4 dimensions, a quantized,
/// integer, F64 or unknown tensor type ("tensor 'x' has unsupported GGUF type
/// Q4_K (quantized types are not read)"), an offset that is not a multiple of
/// the alignment or whose data reaches past the end of the file, overlapping
/// tensors, or a truncated file.
graph::Model read_gguf(const std::string& path);

}  // namespace tailor
