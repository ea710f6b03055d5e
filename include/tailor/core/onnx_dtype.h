// ONNX TensorProto.DataType codes (onnx.proto) ↔ tailor DType: the one table,
// used by the ONNX reader, import, export, the wire walk, Cast and shape inference.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tailor/core/dtype.h"

namespace tailor {

/// The DType of an ONNX TensorProto.DataType code (FLOAT 1, UINT8 2, INT8 3,
/// UINT16 4, INT16 5, INT32 6, INT64 7, BOOL 9, FLOAT16 10, DOUBLE 11,
/// BFLOAT16 16), or nullopt for a code tailor has no DType for (STRING,
/// complex, UINT32/64, FLOAT8, INT4, ...) or one outside the table.
std::optional<DType> dtype_of_onnx(int64_t code);
/// The ONNX TensorProto.DataType code of `t` (inverse of dtype_of_onnx).
int onnx_of_dtype(DType t);
/// The ONNX name of a TensorProto.DataType code ("FLOAT", "FLOAT16",
/// "FLOAT8E4M3FN", ...); "unknown" outside the table (codes 0–23).
std::string_view onnx_type_name(int64_t code);

}  // namespace tailor
