// GGUF (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), versions 2 and 3.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/io/llama2c.h"
#include "tailor/schemes/scheme.h"

namespace tailor {

/// Reads a GGUF file (versions 2 and 3, little-endian) by mapping it. F32,
/// F16 and BF16 tensors become zero-copy views of the mapping (owned copies
/// where the data is not aligned for the element type, possible only with
/// general.alignment 1 or 2), with shape reversed from ggml's ne order, so a
/// matrix with ne = [in, out] is stored [out, in]. Q8_0 and Q4_0 tensors
/// (ggml blocks of 32 along ne[0]) are decoded to f32 as ggml dequantizes
/// them (code · f16 scale; decode_ggml_tensor): 4 bytes per weight in memory;
/// read_gguf_tensors gives their blocks as stored. A weights-only
/// graph::Model: one initializer per tensor in tensor-info order, no nodes,
/// weight_convention out_in (graph::weights: rank ≥ 2 out_in, rank < 2
/// none). Metadata keys with string,
/// integer, float or bool values go to Model::metadata as text (floats in
/// shortest round-trip form, bools "true"/"false"); arrays are summarised as
/// "[array of N]". The data section starts at the first multiple of
/// general.alignment (uint32, a power of two, default 32) after the tensor
/// infos; format is "gguf".
/// Throws Error naming the file (one line) for a bad magic, version 1 or any
/// other unsupported version (big-endian files included), counts or string
/// lengths that cannot fit in the bytes remaining (checked before anything is
/// allocated for them), an unknown metadata value type, arrays nested deeper than 8,
/// duplicate keys or tensor names, more than 4 dimensions, a Q8_0 / Q4_0
/// tensor whose ne[0] is not a multiple of 32, another quantized, an
/// integer, F64 or unknown tensor type ("tensor 'x' has unsupported GGUF type
/// Q4_K (of the quantized types only Q8_0 and Q4_0 are read)"), an offset that is not a multiple of
/// the alignment or whose data reaches past the end of the file, overlapping
/// tensors, or a truncated file.
graph::Model read_gguf(const std::string& path);

/// The tokenizer a GGUF file holds in its tokenizer.ggml.* metadata, as the
/// llama2.c tokenizer tailor encodes and decodes with; nullopt when the file
/// has no tokenizer.ggml.tokens. The inverse of what compress --gguf writes
/// (and llama.cpp's llama2.c converter): U+2581 in a token becomes a space,
/// the control tokens "<s>" and "</s>" take llama2.c's spellings "\n<s>\n"
/// and "\n</s>\n", scores are kept, max_token_length is the longest token in
/// bytes. Throws Error naming the file as read_gguf does, and when
/// tokenizer.ggml.model is present and not "llama", the tokens are not a
/// string array, tokenizer.ggml.scores is missing, not float32 or of another
/// length, or tokenizer.ggml.token_type is of another length.
std::optional<Llama2cTokenizer> read_gguf_tokenizer(const std::string& path);

/// The ggml tensor types tailor writes, and reads as stored bytes
/// (ggml.h's enum ggml_type values).
enum class GgmlType : uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30 };

/// ggml's name of `type` ("F32", "Q4_0", ...).
std::string ggml_type_name(GgmlType type);

/// One tensor of a GGUF file as stored.
struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::f32;
  /// Row-major shape: ggml's ne reversed, so a matrix with ne = [in, out] is
  /// [out, in]; Q4_0 / Q8_0 rows (the last dimension) hold whole blocks of 32.
  Shape shape;
  /// Its bytes as stored, u8 [nbytes]: elements little-endian (F32, F16,
  /// BF16) or ggml blocks (Q4_0: 18 bytes, Q8_0: 34 bytes per 32 elements).
  Tensor data;
};

/// Every tensor of a GGUF file as stored (views of the mapped file), in
/// tensor-info order: F32, F16, BF16, Q4_0 and Q8_0. Throws Error naming the
/// file as read_gguf does, and for any other type or a Q4_0 / Q8_0 tensor
/// whose first dimension (ne[0]) is not a multiple of 32.
std::vector<GgufTensor> read_gguf_tensors(const std::string& path);

/// A metadata value to write: uint32, int32, float32, bool, string, or an
/// array of strings, float32 or int32 (GGUF value types 4, 5, 6, 7, 8, 9).
using GgufValue = std::variant<uint32_t, int32_t, float, bool, std::string,
                               std::vector<std::string>, std::vector<float>, std::vector<int32_t>>;

/// Writes a GGUF version 3 file atomically (write_file_atomic): the metadata
/// in the order given, the tensor infos, then each tensor's bytes at the next
/// multiple of 32 (the default general.alignment, not written). Throws Error
/// naming `path` for a duplicate key or tensor name, a tensor whose data is
/// not u8 of exactly the bytes its type and shape take, a rank outside 1..4,
/// or a Q4_0 / Q8_0 row length that is not a multiple of 32.
void write_gguf(const std::string& path,
                const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensor>& tensors);

/// A Q8_0 / Q4_0 matrix of a GGUF as the scheme q8_0 / q4_0 stores it (its
/// codes and f16 scales, schemes::from_ggml_blocks): what the packed kernels
/// run. Throws Error naming the tensor for another type or a rank other than 2.
std::unique_ptr<schemes::Encoded> ggml_tensor_encoded(const GgufTensor& t);

/// The f32 values of a Q8_0 / Q4_0 tensor of row-major `shape` held in
/// `nbytes` bytes of ggml blocks at `data`: code · f16 scale per block of 32
/// along the last dimension (ggml's dequantize_row_q8_0 / _q4_0). Throws
/// Error naming the type when the bytes do not hold the blocks of `shape`.
Tensor decode_ggml_tensor(GgmlType type, const Shape& shape, const uint8_t* data, uint64_t nbytes);

/// Bytes a tensor of `type` and row-major `shape` takes. Throws Error naming
/// `name` when a block type's row length is not a multiple of 32.
uint64_t ggml_nbytes(GgmlType type, const Shape& shape, const std::string& name);

}  // namespace tailor
