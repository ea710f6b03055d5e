// Chooses a reader by the file's leading bytes and extension.
#include "tailor/io/load_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tailor/core/error.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/onnx.h"
#include "tailor/io/safetensors.h"

namespace tailor {

namespace {

namespace fs = std::filesystem;

graph::Model read_any(const std::string& path, bool mapped) {
  if (path.empty()) throw Error("(empty path)", "no model file given");
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    // A Hugging Face folder: read its model.safetensors.
    const auto st = fs::path(path) / "model.safetensors";
    const bool found = fs::exists(st, ec);
    if (ec) throw Error(st.string(), "cannot look up: " + ec.message());
    if (!found) throw Error(path, "folder holds no model.safetensors");
    return read_safetensors(st.string());
  }
  // Mapping refuses FIFOs and devices without blocking; the readers map again
  // (cheap) and validate the whole file.
  const auto storage = Storage::map_file(path);
  const size_t size = storage->size();
  if (size == 0) throw Error(path, "file is empty");
  const auto* head = reinterpret_cast<const unsigned char*>(storage->data());
  const std::string ext = fs::path(path).extension().string();
  if (size >= 4 && std::memcmp(head, "GGUF", 4) == 0) return read_gguf(path);
  // The extension decides first where a format has one: an ONNX file's or a
  // llama2.c header's 9th byte can happen to be '{'.
  const auto onnx = [&] { return mapped ? read_onnx_mapped(path) : read_onnx(path); };
  if (ext == ".onnx") return onnx();
  // safetensors: u64 header length within the file, then the JSON header's '{'.
  uint64_t header_len = 0;
  if (size >= 9) std::memcpy(&header_len, head, 8);
  const bool safetensors_like = size >= 9 && head[8] == '{' && header_len <= size - 8;
  if (ext == ".safetensors" || (ext != ".bin" && safetensors_like)) return read_safetensors(path);
  if (ext == ".bin") {
    if (size >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0)
      throw Error(path,
                  "a PyTorch zip checkpoint, which tailor does not read: save it as safetensors");
    if (safetensors_like) return read_safetensors(path);
    return read_llama2c(path);
  }
  // ONNX ModelProto: field 1 (ir_version, varint) opens every file the
  // exporters write; otherwise leave the verdict to the protobuf parser.
  if (head[0] == 0x08) return onnx();
  throw Error(path,
              "unrecognised model format (expected ONNX, safetensors, GGUF or a llama2.c .bin)");
}

graph::Model load(const std::string& path, bool mapped) {
  return read_any(path, mapped);
}

}  // namespace

graph::Model load_model(const std::string& path) {
  return load(path, false);
}

graph::Model load_model_mapped(const std::string& path) {
  return load(path, true);
}

graph::Model load_runnable_model(const std::string& path) {
  graph::Model m = load_model(path);
  // A llama checkpoint runs as its decoder graph with a KV cache (the file's
  // weights, read once, become its initializers).
  if (is_llama_checkpoint(m)) {
    const LlamaCheckpoint ck = llama_checkpoint(m);
    return llama_graph(ck.weights, ck.config, ck.pairing, path, ck.packed);
  }
  if (m.graph.nodes.empty())
    throw Error(path, "has no graph to run (a weights-only " + m.format + " model)");
  if (m.format == "onnx") check_onnx_support(m);
  return m;
}

bool is_llama_checkpoint(const graph::Model& model) {
  if (model.format == "llama2c") return true;
  if (model.format == "gguf") {
    const auto it = model.metadata.find("general.architecture");
    return it != model.metadata.end() && it->second == "llama";
  }
  if (model.format != "safetensors") return false;
  // An HF folder: config.json beside model.safetensors names the architecture.
  const fs::path config = fs::path(model.source).parent_path() / "config.json";
  std::ifstream in(config, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  // A config.json that is not a JSON object is taken as a llama's, so the
  // llama reader names what is wrong with it (compress, generate and kld do
  // the same) instead of "weights-only".
  if (j.is_discarded() || !j.is_object()) return true;
  if (j.contains("model_type") && j["model_type"] == "llama") return true;
  if (!j.contains("architectures") || !j["architectures"].is_array()) return false;
  for (const auto& a : j["architectures"])
    if (a.is_string() && a.get<std::string>() == "LlamaForCausalLM") return true;
  return false;
}

}  // namespace tailor
