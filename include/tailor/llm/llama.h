// Running a decoder graph with a KV cache (io/llama_graph.h builds one from a
// llama checkpoint; ONNX exports of decoder models have the same signature)
// through tailor's executor, one step per call, and greedy decoding.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"

namespace tailor::runtime {
class Executor;
}

namespace tailor::llm {

/// The inputs and outputs of a decoder graph.
struct DecoderSignature {
  /// One cached tensor: the past input, the present output of the same step,
  /// and its declared [1, heads, past, head_dim] sizes.
  struct Cache {
    std::string past, present;
    int64_t heads = 0, head_dim = 0;
  };
  std::string input_ids = "input_ids";
  std::string logits = "logits";
  /// In graph-input order.
  std::vector<Cache> cache;
  /// The last dim of `logits`.
  int64_t vocab = 0;
  /// Positions the graph can take (rows of its RoPE table llama.rope.cos), or
  /// 0 when it does not say.
  int64_t context = 0;
};

/// Reads the signature of `model`: input "input_ids" (int64 [1, S]), output
/// "logits" ([1, S, vocab], vocab known), and for every other input a past
/// named past_key_values.{i}.{key,value} (or past.{i}.{key,value}) of declared
/// f32 [1, heads, P, head_dim] with P symbolic and the rest known, whose
/// present.{i}.{key,value} is an output. Throws Error naming the model's
/// source and the value otherwise.
DecoderSignature decoder_signature(const graph::Model& model);

/// Empty caches [1, heads, 0, head_dim] (f32) for every past of `model` not in
/// `given`: the inputs of a first step. Inputs that are not pasts are left to
/// the caller. Throws as decoder_signature does only for a past it cannot size:
/// a graph input whose name starts with "past" and whose declared type is f32
/// with exactly one dim not known gets that dim 0; others are skipped.
std::map<std::string, Tensor> empty_pasts(const graph::Model& model,
                                          const std::map<std::string, Tensor>& given = {});

/// Checks the inputs of one run of a decoder graph (`tailor run` on a llama
/// checkpoint) for what the graph's declared types cannot say: `input_ids`
/// (int64 [1, S]) holds S ≥ 1 tokens, each in [0, vocab); every past holds
/// the same number of positions P; P + S is within the context (the RoPE
/// table's rows). Does nothing when `model` is not a decoder graph
/// (decoder_signature refuses it) or a feed is of another dtype or rank (the
/// executor names those). Throws Error naming the input, one line, otherwise.
void check_decoder_feeds(const graph::Model& model, const std::map<std::string, Tensor>& feeds);

/// The passes that leave a graph exactly as io's llama_graph builds it (f32
/// weights, no constant subexpression to fold, simplify or share) as the whole
/// default pipeline would, after the decoder fusions: "fuse" (SiLU · up into
/// one FusedElementwise) and "dce". The others only search such a graph, ≈ 2/3
/// of compiling it (tests/llm/decoder_test.cpp compares the two results).
std::vector<std::string> llama_graph_passes();

/// Runs a decoder graph over a growing token sequence: each forward feeds the
/// new tokens with the previous step's presents as pasts (the KV cache).
/// The graph is compiled once, at construction: its attention and RMSNorms
/// fused into ai.tailor Attention and RMSNormalization nodes (one kernel each,
/// src/llm/decoder_fusions.h), then tailor's default pass pipeline.
class Decoder {
 public:
  /// Compiles `model` (see decoder_signature for what it must look like; a
  /// caller done with it moves it in, saving a copy).
  /// `extra_outputs` names intermediate values to expose as outputs (see
  /// outputs()); throws Error naming one the graph lacks.
  explicit Decoder(graph::Model model, const std::vector<std::string>& extra_outputs = {});
  /// The same, running the pass list `passes` (graph::parse_pass_list names)
  /// after the decoder fusions in place of the whole default pipeline, e.g.
  /// llama_graph_passes() for a graph as io's llama_graph builds it.
  Decoder(graph::Model model, const std::vector<std::string>& extra_outputs,
          const std::vector<std::string>& passes);
  ~Decoder();
  Decoder(Decoder&&) noexcept;

  /// Processes `tokens` at positions pos() … pos() + n − 1 (causal attention
  /// over everything before) and returns their next-token logits, row-major
  /// [n, vocab]. Throws Error when `tokens` is empty, a token is outside the
  /// vocabulary or the sequence would pass signature().context positions;
  /// a step failing inside the graph (a kernel's Error) also resets().
  std::vector<float> forward(std::span<const int32_t> tokens);
  /// Every output of the last forward by name (logits, presents, extra
  /// outputs); empty before the first forward after reset().
  const std::map<std::string, Tensor>& outputs() const;
  /// Positions processed so far.
  int32_t pos() const { return pos_; }
  /// Forgets every position (empty caches).
  void reset();
  const DecoderSignature& signature() const { return sig_; }
  /// The executor running the compiled graph (its op_profile() after
  /// set_profiling(true), its model() as compiled).
  runtime::Executor& executor() { return *ex_; }

 private:
  DecoderSignature sig_;
  std::unique_ptr<runtime::Executor> ex_;
  // The step runs by position (Executor::run_ordered): input_ids and each
  // cache's past and present at their index among the executor's inputs
  // and outputs.
  size_t ids_input_ = 0, logits_output_ = 0;
  std::vector<size_t> past_input_, present_output_;  // by cache
  std::vector<Tensor> pasts_;  // by cache: the next step's pasts (the last presents)
  std::vector<Tensor> outs_;   // the last forward's outputs, its presents moved to pasts_
  mutable std::map<std::string, Tensor> outputs_;  // outputs(), built on demand
  mutable bool outputs_current_ = false;
  int32_t pos_ = 0;
};

/// Greedy decoding with a Decoder: the prompt (non-empty) in one step, then
/// one token per step, appending the argmax (lowest index on ties) `n_tokens`
/// times, stopping early after `stop_token` when it is ≥ 0. Returns only the
/// generated tokens. Throws Error (source "generate") when the prompt is empty
/// or prompt + n_tokens passes the context by more than one (the last token
/// is never fed back).
std::vector<int32_t> generate_greedy(const graph::Model& model, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token = -1);
/// The same with a Decoder already compiled (reset first).
std::vector<int32_t> generate_greedy(Decoder& decoder, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token = -1);

/// Names of the initializers `model` uses as linear weights: the B operand
/// of a Gemm (any transB) or MatMul of the main graph, a floating matrix, in
/// node order, each once (a tied embedding is one: it is also the
/// classifier); the llama builder's own constants ("llama." names) excluded.
std::vector<std::string> linear_weights(const graph::Model& model);

/// For each linear weight (linear_weights), the value its Gemm/MatMul
/// multiplies it with (the layer's input activation, [rows, in]); a weight
/// read by several such nodes maps to the first.
std::map<std::string, std::string> linear_inputs(const graph::Model& model);

}  // namespace tailor::llm
