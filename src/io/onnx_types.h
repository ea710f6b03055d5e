// ONNX TensorProto.DataType ↔ tailor DType: the io reader's mapping, one for
// import, export and the compress rewrite.
#pragma once

#include "tailor/io/onnx_reader.h"

namespace tailor::graph {

using ::tailor::dtype_of_onnx;
using ::tailor::onnx_of_dtype;

}  // namespace tailor::graph
