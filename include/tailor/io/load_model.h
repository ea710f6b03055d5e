// One entry point for every model format: load_model gives a graph::Model.
#pragma once

#include <string>

#include "tailor/graph/graph.h"

namespace tailor {

/// Loads a model as a graph::Model. ONNX gives its graph (read_onnx); the
/// formats without a graph give a weights-only model (initializers in file
/// order, no nodes; Model::weight_convention says how graph::weights orients
/// them): safetensors and a Hugging Face folder (its model.safetensors;
/// metadata "config.json" = the folder's config.json path when present),
/// GGUF, llama2.c.
///
/// A folder is read as a Hugging Face folder. A file goes by its leading
/// bytes and extension, in this order: the GGUF magic; `.onnx`;
/// `.safetensors`, or a plausible safetensors header (u64 length within the
/// file, then '{') on any extension but `.bin`; `.bin`: a safetensors header
/// if plausible, a PyTorch zip (refused by name), else a llama2.c checkpoint;
/// finally a protobuf opening with ir_version is read as ONNX. Throws Error
/// naming the file for an empty path, a file no reader accepts, one that is
/// not a regular file, or one that fails the reader's validation.
graph::Model load_model(const std::string& path);

/// load_model, with ONNX files read by read_onnx_mapped (large weights
/// viewed in the mapped file, never parsed whole): for `tailor profile`.
graph::Model load_model_mapped(const std::string& path);

/// load_model for running (`tailor run`, `tailor tune`): a llama checkpoint
/// (is_llama_checkpoint) becomes its decoder graph with a KV cache
/// (llama_graph, tailor/io/llama_graph.h; a GGUF's Q8_0 / Q4_0 matrices kept
/// packed, LlamaCheckpoint::packed); any other model must have a
/// graph, and an ONNX one only what the runtime supports
/// (check_onnx_support). Throws Error naming the file, in one line, for a
/// weights-only model ("has no graph to run"), and everything load_model and
/// check_onnx_support throw.
graph::Model load_runnable_model(const std::string& path);

/// Whether a loaded model is a llama checkpoint that the llama decoder graph
/// builder turns into a graph: llama2.c; GGUF with general.architecture
/// "llama"; a Hugging Face folder whose config.json lists LlamaForCausalLM in
/// "architectures" or says model_type "llama" (or is not a JSON object: the
/// llama reader then names the problem). False for ONNX and every other weights-only model.
bool is_llama_checkpoint(const graph::Model& model);

}  // namespace tailor
