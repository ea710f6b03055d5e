// Chooses a reader by the file's leading bytes and extension.
#include <cstring>
#include <filesystem>

#include "tailor/core/error.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/model.h"
#include "tailor/io/onnx_reader.h"
#include "tailor/io/safetensors.h"

namespace tailor {

namespace {

ModelFile load(const std::string& path, bool mapped) {
  namespace fs = std::filesystem;
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

}  // namespace

ModelFile load_model(const std::string& path) {
  return load(path, false);
}

ModelFile load_model_mapped(const std::string& path) {
  return load(path, true);
}

}  // namespace tailor
