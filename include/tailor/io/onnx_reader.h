// ONNX model reading (https://github.com/onnx/onnx/blob/main/docs/IR.md).
#pragma once

#include <string>

#include "tailor/io/model.h"

namespace tailor {

/// Reads an ONNX model with libonnx's protobuf classes. Weights come from graph
/// initializers and from `Constant` nodes (attribute `value`, and the
/// `value_float(s)`/`value_int(s)` forms), in the main graph and in every
/// subgraph of If/Loop/Scan nodes (names as in the file; a subgraph weight
/// whose name repeats an outer one gets "<node name>/<branch>/" prefixed).
/// Tensor data from `raw_data`, the typed fields (float_data, int32_data for
/// f16/bf16/int8/..., int64_data, double_data) or external data files
/// (`location`, `offset`, `length`), which must lie inside the model's folder.
/// Orientation from the consumers: MatMul's B in_out, Gemm's B by transB, Conv
/// kernels conv, ConvTranspose kernels conv_transpose, other rank ≥ 2 floating
/// tensors out_in. Keeps the ModelProto in ModelFile::onnx (its tensor
/// payloads included) for the runtime.
/// Throws Error naming the file for an unparsable protobuf, a tensor whose data
/// length disagrees with its shape and type, an unsupported data type, an
/// external path outside the model folder, or a missing external file.
ModelFile read_onnx(const std::string& path);

}  // namespace tailor
