// ONNX model reading (https://github.com/onnx/onnx/blob/main/docs/IR.md).
#pragma once

#include <optional>
#include <string>

#include "tailor/io/model.h"

namespace tailor {

/// Reads an ONNX model with libonnx's protobuf classes (the file must be under
/// 2 GiB; larger models keep their weights in external data files).
///
/// Weights come from graph initializers and from `Constant` nodes (attribute
/// `value`, and the `value_float(s)`/`value_int(s)` forms: f32 and i64 scalars
/// or vectors), in the main graph and in every subgraph of If/Loop/Scan nodes
/// (graph-valued attributes, nested as deep as protobuf's parser allows: its
/// recursion limit of 100 messages, about 32 nested If nodes). String constants (`value_string(s)`
/// or a STRING `value` tensor) are skipped: they are not weights. Order: a
/// graph's initializers, then its Constant nodes, then the weights of its
/// subgraphs, node by node. Names are as in the file (a Constant's is its
/// output's); a subgraph weight whose name repeats an earlier one gets
/// "<node name>/<attribute>/" prefixed ("<attribute>.<i>" for the i-th graph of
/// a `graphs` attribute, "<op type>@<index>" for an unnamed node, "#2", "#3"
/// appended should the prefixed name repeat too).
///
/// Tensor data from `raw_data` (little-endian, copied into owned storage), the
/// typed fields (float_data; int32_data for i32/i16/i8/u16/u8/bool and the bit
/// patterns of f16/bf16; int64_data; double_data) or external data files
/// (`location`, `offset`, `length`; mapped, tensors view the mapping), which must
/// resolve inside the model's folder, symbolic links included. ONNX types map
/// to f32, f16, bf16, f64, i8, u8, i16, u16, i32, i64 and bool.
///
/// Orientation from the direct consumers of each weight, in its own graph or
/// by outer-scope reference from a subgraph: Conv kernels conv, ConvTranspose
/// kernels conv_transpose (rank ≥ 3), MatMul's rank-2 B and Gemm's B with
/// transB = 0 in_out, Gemm's B with transB = 1, Gather's data (embedding
/// tables) and batched MatMul operands out_in. Everything else is none: rank
/// < 2, non-floating, and tensors no matrix operation consumes (biases and
/// scales broadcast into Add/Mul, whatever their rank). Should consumers
/// disagree, conv wins over conv_transpose over in_out over out_in.
///
/// Keeps the ModelProto in ModelFile::onnx (its tensor payloads included) for
/// the runtime; metadata: "ir_version", "opset" (default domain),
/// "producer_name" and "producer_version" (when set).
///
/// Throws Error naming the file, in one line, for an unparsable protobuf or a
/// model without a graph, a tensor whose data length disagrees with its shape
/// and type, a negative dimension or a size that overflows, an unsupported
/// data type (STRING, complex, UINT32/64, FLOAT8, INT4, ...), a sparse tensor
/// or tensor segment, a weight name defined twice in one graph, and external
/// data whose path leaves the model folder, whose file is missing, or whose
/// offset and length do not fit the file.
ModelFile read_onnx(const std::string& path);

/// read_onnx without parsing or holding the file whole, for models with large
/// weights inside the .onnx (`tailor profile`): the file is mapped, its
/// protobuf wire format walked with google::protobuf::io::CodedInputStream to
/// find every initializer's and Constant tensor's payload (raw_data, or a
/// packed float_data/double_data) of 4096 bytes or more, and only the rest of
/// the model (names, dims, data types, nodes, small tensors) is parsed; each
/// large weight is a view of its bytes in the mapping (possibly misaligned:
/// read it with Tensor::to or raw(), not data<T>()). ModelFile::onnx then
/// holds those tensors as external data naming the file itself (`location`,
/// `offset`, `length`). Same weights, names, order, layouts and values as
/// read_onnx, so the same profile. Works for files of 2 GiB and more as long
/// as the structure without the payloads is under 2 GiB. Throws Error naming
/// the file, in one line, for everything read_onnx refuses and for a
/// truncated field or a length that runs past its message (the byte offset
/// is given).
ModelFile read_onnx_mapped(const std::string& path);

/// The DType of an ONNX TensorProto.DataType number (onnx.proto), or nullopt
/// for a type tailor has no DType for (STRING, complex, UINT32/64, FLOAT8, INT4, ...).
std::optional<DType> dtype_of_onnx(int onnx_type);
/// The ONNX TensorProto.DataType number of `t` (UNDEFINED, 0, never for a valid DType).
int onnx_of_dtype(DType t);

}  // namespace tailor
