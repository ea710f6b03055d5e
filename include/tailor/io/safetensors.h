// safetensors (https://github.com/huggingface/safetensors, format README):
// u64 little-endian header length N, N bytes of JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data; offsets are relative to the end of the header.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"

namespace tailor {

/// Reads a safetensors file by mapping it: tensors are zero-copy views of the
/// mapping when their offset is aligned for the dtype, otherwise owned copies.
/// Validates before trusting: header length within the file and at most
/// 100 MB, JSON well-formed, known dtypes (F64 F32 F16 BF16 I64 I32 I16 I8 U16
/// U8 BOOL), shape × dtype size equal to the byte span, offsets within the data,
/// tensors neither overlapping nor leaving gaps (the whole buffer indexed, as
/// the format requires), names unique, `__metadata__` string to string.
/// Gives a weights-only graph::Model (format "safetensors", source = path,
/// metadata = `__metadata__`): one initializer per tensor in the header's
/// order, no nodes, weight_convention pytorch (graph::weights: rank-2 floating
/// tensors out_in, rank ≥ 3 floating tensors — conv kernels [out, in/groups,
/// k...] — conv, others none).
/// Throws Error naming the file and the problem.
graph::Model read_safetensors(const std::string& path);

/// A tensor to write, with its name.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Writes tensors and `metadata` (as `__metadata__`) atomically (temporary file
/// + rename). The header is padded with spaces to a multiple of 8 bytes and the
/// data holds the tensors by descending element size, so each starts aligned
/// to its element size with no holes. Non-contiguous tensors are written in
/// row-major order of their shape. Throws Error for duplicate or empty names,
/// or a dtype safetensors cannot hold.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace tailor
