// llama.cpp outputs of a plan: model.gguf (`tailor compress --gguf`) and the
// per-tensor type file of llama-quantize (`tailor plan --llama-tensor-types`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/llama_graph.h"
#include "tailor/plan/plan.h"

namespace tailor::compress {

/// The ggml type a plan label is stored as in a GGUF: "dense" → F32,
/// "q8_0" → Q8_0, "q4_0" → Q4_0; nullopt for every other label.
std::optional<GgmlType> ggml_type_of(const std::string& label);

/// The schemes a GGUF holds exactly, the catalog `compress --gguf` profiles:
/// dense, q8_0, q4_0.
const std::vector<std::string>& gguf_schemes();

/// Writes the GGUF (version 3) of a llama checkpoint compressed by `layers`
/// (encode_plan's, names as in the checkpoint) to `path`, atomically:
/// general.architecture "llama" and llama.* hyper-parameters from ck.config
/// (context_length, embedding_length, block_count, feed_forward_length,
/// rope.dimension_count = head_dim, attention.head_count(_kv),
/// attention.layer_norm_rms_epsilon, rope.freq_base, vocab_size); the
/// tokenizer as tokenizer.ggml.model "llama" with tokens (spaces as U+2581,
/// ids 0/1/2 "<unk>", "<s>", "</s>"), scores, token_type (unknown 2, control 3,
/// byte 6 for "<0xHH>", normal 1) and bos 1, eos 2, unknown 0; every tensor
/// under llama.cpp's name (io::llama_gguf_name), a planned q8_0 / q4_0 layer
/// in its ggml blocks, everything else F32 (no output.weight when the
/// classifier is shared). q_proj / k_proj of a rotate-half checkpoint (HF)
/// are permuted back to the interleaved pairs llama.cpp's rope expects.
/// Throws Error naming the layer for a planned label with no ggml type, a
/// tensor without a llama.cpp name, or a tokenizer whose size is not the
/// vocabulary's.
void write_llama_gguf(const std::string& path, const LlamaCheckpoint& ck,
                      const std::vector<EncodedLayer>& layers, const Llama2cTokenizer& tokenizer);

/// Writes llama-quantize's --tensor-type-file for `plan`: one line
/// `^<gguf name>$=<type>` per planned layer (the name a regular expression
/// with its dots escaped; type q8_0, q4_0, or f32 for dense), in plan order,
/// atomically. Throws Error naming the layer for a label with no ggml type or
/// a name that is not a llama tensor's.
void write_llama_tensor_types(const std::string& path, const plan::Plan& plan);

}  // namespace tailor::compress
