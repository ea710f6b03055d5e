// ONNX files ↔ the graph IR (io depends on graph, never the reverse):
// read_onnx / read_onnx_mapped give a graph::Model, export_onnx / write_onnx
// write one back (https://github.com/onnx/onnx/blob/main/docs/IR.md).
#pragma once

#include <memory>
#include <string>

#include "tailor/graph/graph.h"

namespace onnx {
class ModelProto;
}

namespace tailor {

/// Reads an ONNX model into a graph::Model (the file must be under 2 GiB;
/// larger models keep their weights in external data files), every tensor
/// decoded once.
///
/// Graph: nodes (reordered topologically when the file is not, the earliest
/// ready node first; a cycle is an Error naming a node on it), inputs,
/// outputs, value types from graph inputs/outputs and value_info (symbolic
/// dims kept by name), initializers, attributes, and the subgraphs of
/// If/Loop/Scan (graph-valued attributes, nested as deep as protobuf's parser
/// allows: its recursion limit of 100 messages, about 32 nested If nodes).
/// Any opset and domain is read ("ai.onnx" normalised to ""); import_onnx
/// checks what the runtime supports. A STRING tensor attribute (a string
/// Constant) is kept as a `strings` attribute; it is no weight.
///
/// Tensors (initializers and tensor attributes such as Constant values):
/// raw_data (little-endian) moves from the ModelProto into the tensor's
/// storage without copying (Model::proto's raw_data fields are left empty;
/// copied only when misaligned for the type); the typed
/// fields (float_data; int32_data for i32/i16/i8/u16/u8/bool and the bit
/// patterns of f16/bf16; int64_data; double_data) are copied; external data
/// files (`location`, `offset`, `length`), which must resolve inside the
/// model's folder, symbolic links included, are mapped and viewed. ONNX types
/// map to f32, f16, bf16, f64, i8, u8, i16, u16, i32, i64 and bool
/// (tailor/core/onnx_dtype.h). graph::weights gives the weights with their
/// orientation.
///
/// Model: format "onnx", source = path, opsets, ir_version, producer;
/// metadata "ir_version", "opset" (default domain, when imported),
/// "producer_name" and "producer_version" (when set).
///
/// Throws Error naming the file, in one line, for an unparsable protobuf or a
/// model without a graph, a tensor whose data length disagrees with its shape
/// and type, a negative dimension or a size that overflows, an unsupported
/// data type (STRING, complex, UINT32/64, FLOAT8, INT4, ...), a sparse tensor
/// or tensor segment, a weight name (initializer or Constant output) defined
/// twice in one graph, a Constant without exactly one value attribute or with
/// sparse_value, an attribute of an unsupported kind (type protos), and
/// external data whose path leaves the model folder, whose file is missing,
/// or whose offset and length do not fit the file.
graph::Model read_onnx(const std::string& path);

/// read_onnx without parsing or holding the file whole, for models with large
/// weights inside the .onnx (`tailor profile`): the file is mapped, its
/// protobuf wire format walked with google::protobuf::io::CodedInputStream to
/// find every initializer's and tensor attribute's payload (raw_data, or a
/// packed float_data/double_data) of 4096 bytes or more, and only the rest of
/// the model (names, dims, data types, nodes, small tensors) is parsed; each
/// large tensor is a view of its bytes in the mapping (possibly misaligned:
/// read it with Tensor::to or raw(), not data<T>()). Model::proto then holds
/// those tensors as external data naming the file itself (`location`,
/// `offset`, `length`). Same graph, weights, names, order, layouts and values
/// as read_onnx, so the same profile. Works for files of 2 GiB and more as
/// long as the structure without the payloads is under 2 GiB. Throws Error
/// naming the file, in one line, for everything read_onnx refuses and for a
/// truncated field or a length that runs past its message (the byte offset
/// is given).
graph::Model read_onnx_mapped(const std::string& path);

/// Checks that an ONNX model is one the runtime runs: a default-domain opset
/// imported and within 9–17, every node (subgraphs included) in the default
/// domain or "ai.tailor". Throws Error naming model.source and, for a node,
/// its label, domain and op.
void check_onnx_support(const graph::Model& model);

}  // namespace tailor

namespace tailor::graph {

/// read_onnx(path) then check_onnx_support: a graph the runtime can run.
Model import_onnx(const std::string& path);

/// The ModelProto of `model`: opset imports, graph (nodes, inputs/outputs with
/// their types, value_info for other typed values, initializers with raw_data),
/// subgraphs recursively. Tensor bytes are copied into the proto.
std::shared_ptr<onnx::ModelProto> export_onnx(const Model& model);

/// Writes export_onnx(model) to `path` atomically (write_file_atomic). Throws
/// Error naming `path` when the model is too large for one protobuf (2 GiB) or
/// the write fails.
void write_onnx(const Model& model, const std::string& path);

}  // namespace tailor::graph
