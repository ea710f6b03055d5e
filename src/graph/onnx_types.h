// ONNX TensorProto.DataType ↔ tailor DType.
#pragma once

#include <optional>

#include "tailor/core/dtype.h"

namespace tailor::graph {

/// The DType of an ONNX data type number, or nullopt when tailor has none.
std::optional<DType> dtype_of_onnx(int t);
/// The ONNX data type number of `t`.
int onnx_of_dtype(DType t);

}  // namespace tailor::graph
