// GGUF (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), versions 2 and 3.
#pragma once

#include <string>

#include "tailor/io/model.h"

namespace tailor {

/// Reads a GGUF file by mapping it. F32, F16 and BF16 tensors become views
/// (copies where misaligned) with shape reversed from ggml's ne order, so a
/// matrix with ne = [in, out] is stored [out, in] (layout out_in). Metadata
/// keys with string, integer, float or bool values go to ModelFile::metadata
/// (arrays are summarised as "[array of N]").
/// Throws Error naming the file for a bad magic, an unsupported version,
/// counts or string lengths that cannot fit in the file, a quantized or
/// unknown tensor type ("tensor 'x' has unsupported GGUF type Q4_K"), offsets
/// past the end, or overlapping tensors.
ModelFile read_gguf(const std::string& path);

}  // namespace tailor
