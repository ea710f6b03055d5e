// ONNX ↔ graph IR (io depends on graph, never the reverse): import a
// ModelProto (opsets 9–17, default domain) into a Model and export a Model
// back to an ONNX file (https://github.com/onnx/onnx/blob/main/docs/IR.md).
#pragma once

#include <memory>
#include <string>

#include "tailor/graph/graph.h"
#include "tailor/io/model.h"

namespace tailor::graph {

/// Imports the ONNX graph of `file` (format "onnx": ModelFile::onnx set).
/// Initializers and Constant values view the ModelProto's raw_data without
/// copying when the bytes are aligned for their type (the Storage keeps the
/// ModelProto alive); typed fields and misaligned raw_data are copied; external
/// data comes from `file.weights` (mapped views). Subgraphs of If/Loop/Scan are
/// imported recursively. Value types come from graph inputs/outputs and
/// value_info (symbolic dims kept by name).
///
/// Throws Error naming the file for: no ONNX graph, a default-domain opset
/// outside 9–17, a node in another domain than the default one or
/// "ai.tailor" (the domain and op are named), an attribute of an unsupported
/// kind (sparse tensors, type protos), or tensor data that disagrees with its shape.
Model import_onnx(const ModelFile& file);

/// read_onnx(path) then import_onnx.
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
