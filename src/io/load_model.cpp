// Chooses a reader by the file's leading bytes.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tailor/core/error.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/model.h"
#include "tailor/io/onnx_reader.h"
#include "tailor/io/safetensors.h"

namespace tailor {

ModelFile load_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // A Hugging Face folder: read its model.safetensors.
    const auto st = std::filesystem::path(path) / "model.safetensors";
    if (std::filesystem::exists(st, ec)) return read_safetensors(st.string());
    throw Error(path, "folder holds no model.safetensors");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  unsigned char head[9] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const size_t got = static_cast<size_t>(in.gcount());
  if (got == 0) throw Error(path, "file is empty");
  if (got >= 4 && std::memcmp(head, "GGUF", 4) == 0) return read_gguf(path);
  // An ONNX file's 9th byte can be '{' too (a field length of 123, a producer
  // name's character), so the .onnx extension decides before that sniff.
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") return read_onnx(path);
  // safetensors: u64 header length, then the JSON header's '{'.
  if (got == 9 && head[8] == '{') return read_safetensors(path);
  if (ext == ".bin") return read_llama2c(path);
  // ONNX ModelProto: field 1 (ir_version, varint) opens every file the
  // exporters write; otherwise leave the verdict to the protobuf parser.
  if (head[0] == 0x08) return read_onnx(path);
  throw Error(path,
              "unrecognised model format (expected ONNX, safetensors, GGUF or a llama2.c .bin)");
}

}  // namespace tailor
