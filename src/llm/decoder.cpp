// A decoder graph with a KV cache run through the executor, and greedy
// decoding (include/tailor/llm/llama.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "llm/decoder_fusions.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/io/llama_graph.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"

namespace tailor::llm {
namespace {

std::string source_of(const graph::Model& m) {
  return m.source.empty() ? std::string("decoder") : m.source;
}

/// The present output of past input `past`: past_key_values.X → present.X, past.X → present.X.
std::string present_of(const std::string& past) {
  for (const std::string prefix : {"past_key_values.", "past."})
    if (past.rfind(prefix, 0) == 0) return "present." + past.substr(prefix.size());
  return "";
}

}  // namespace

DecoderSignature decoder_signature(const graph::Model& m) {
  const std::string src = source_of(m);
  const graph::Graph& g = m.graph;
  DecoderSignature sig;
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  check(has(g.inputs, sig.input_ids), src, "decoder graph has no input 'input_ids'");
  const graph::ValueType* ids = g.type_of(sig.input_ids);
  check(ids && ids->dtype == DType::i64 && ids->shape && ids->shape->size() == 2, src,
        "decoder input 'input_ids' is not declared int64 [1, sequence]");
  check(has(g.outputs, sig.logits), src, "decoder graph has no output 'logits'");
  const graph::ValueType* lt = g.type_of(sig.logits);
  check(lt && lt->shape && lt->shape->size() == 3 && lt->shape->back().is_known(), src,
        "decoder output 'logits' is not declared [1, sequence, vocab] with a known vocab");
  sig.vocab = lt->shape->back().value;
  for (const std::string& in : g.inputs) {
    if (in == sig.input_ids) continue;
    const std::string present = present_of(in);
    check(!present.empty(), src,
          "decoder input '" + in + "' is neither input_ids nor a past (past_key_values.*)");
    check(has(g.outputs, present), src,
          "decoder past '" + in + "' has no output '" + present + "'");
    const graph::ValueType* t = g.type_of(in);
    const bool ok = t && t->dtype == DType::f32 && t->shape && t->shape->size() == 4 &&
                    (*t->shape)[0].is_known() && (*t->shape)[0].value == 1 &&
                    (*t->shape)[1].is_known() && !(*t->shape)[2].is_known() &&
                    (*t->shape)[3].is_known();
    check(ok, src, "decoder past '" + in + "' is not declared f32 [1, heads, past, head_dim]");
    sig.cache.push_back({in, present, (*t->shape)[1].value, (*t->shape)[3].value});
  }
  if (auto it = g.initializers.find("llama.rope.cos"); it != g.initializers.end())
    sig.context = it->second.rank() > 0 ? it->second.dim(0) : 0;
  return sig;
}

std::map<std::string, Tensor> empty_pasts(const graph::Model& model,
                                          const std::map<std::string, Tensor>& given) {
  std::map<std::string, Tensor> out;
  for (const std::string& in : model.graph.inputs) {
    if (given.count(in) || in.rfind("past", 0) != 0) continue;
    const graph::ValueType* t = model.graph.type_of(in);
    if (!t || t->dtype != DType::f32 || !t->shape) continue;
    Shape s;
    int unknown = 0;
    for (const graph::Dim& d : *t->shape) {
      unknown += !d.is_known();
      s.push_back(d.is_known() ? d.value : 0);
    }
    if (unknown == 1) out[in] = Tensor::zeros(DType::f32, s);
  }
  return out;
}

void check_decoder_feeds(const graph::Model& model, const std::map<std::string, Tensor>& feeds) {
  DecoderSignature sig;
  try {
    sig = decoder_signature(model);
  } catch (const Error&) {
    return;  // not a decoder graph: nothing decoder-specific to check
  }
  const auto ids = feeds.find(sig.input_ids);
  if (ids == feeds.end() || ids->second.dtype() != DType::i64 || ids->second.rank() != 2) return;
  const std::string who = "input '" + sig.input_ids + "'";
  const int64_t n = ids->second.numel();
  check(n > 0, who, "holds no token (a decoder step needs at least one)");
  const Tensor ids_c = ids->second.contiguous();
  const int64_t* t = ids_c.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    check(t[i] >= 0 && t[i] < sig.vocab, who,
          "token " + std::to_string(t[i]) + " at position " + std::to_string(i) +
              " is outside the vocabulary [0, " + std::to_string(sig.vocab) + ")");
  int64_t past = -1;
  std::string first;
  for (const DecoderSignature::Cache& c : sig.cache) {
    const auto it = feeds.find(c.past);
    if (it == feeds.end() || it->second.rank() != 4) continue;
    const int64_t p = it->second.dim(2);
    if (past < 0) {
      past = p, first = c.past;
      continue;
    }
    check(p == past, "input '" + c.past + "'",
          "holds " + std::to_string(p) + " past positions, '" + first + "' holds " +
              std::to_string(past) + " (every past must hold the same positions)");
  }
  const int64_t positions = std::max<int64_t>(past, 0) + ids->second.dim(1);
  check(sig.context == 0 || positions <= sig.context, who,
        std::to_string(positions) + " positions (past + new tokens) pass the context length " +
            std::to_string(sig.context));
}

std::vector<std::string> llama_graph_passes() {
  return {"fuse", "dce"};
}

Decoder::Decoder(graph::Model model, const std::vector<std::string>& extra_outputs)
    : Decoder(std::move(model), extra_outputs, graph::parse_pass_list("all")) {}

Decoder::Decoder(graph::Model model, const std::vector<std::string>& extra_outputs,
                 const std::vector<std::string>& passes)
    : sig_(decoder_signature(model)) {
  const std::string src = source_of(model);
  graph::Model& m = model;  // compiled in place (a caller done with it moves it in)
  if (!extra_outputs.empty()) {
    std::set<std::string> values(m.graph.inputs.begin(), m.graph.inputs.end());
    for (const graph::Node& n : m.graph.nodes) values.insert(n.outputs.begin(), n.outputs.end());
    for (const std::string& v : extra_outputs) {
      check(values.count(v) > 0, src, "decoder graph has no value '" + v + "'");
      if (std::find(m.graph.outputs.begin(), m.graph.outputs.end(), v) == m.graph.outputs.end())
        m.graph.outputs.push_back(v);
    }
  }
  fuse_attention(m);
  fuse_group_query_attention(m);
  fuse_rms_norm(m);
  fuse_skip_rms_norm(m);
  m = graph::run_passes(std::move(m), passes, runtime::default_pass_options());
  // run_passes ends by verifying the graph: the executor need not again.
  ex_ =
      std::make_unique<runtime::Executor>(std::move(m), runtime::ExecutorOptions{.verify = false});
  const std::vector<std::string>&ins = ex_->input_names(), &outs = ex_->output_names();
  auto index = [&](const std::vector<std::string>& names, const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    check(it != names.end(), src, "compiled decoder graph lost '" + name + "'");
    return static_cast<size_t>(it - names.begin());
  };
  ids_input_ = index(ins, sig_.input_ids);
  logits_output_ = index(outs, sig_.logits);
  for (const DecoderSignature::Cache& c : sig_.cache) {
    past_input_.push_back(index(ins, c.past));
    present_output_.push_back(index(outs, c.present));
  }
  check(ins.size() == sig_.cache.size() + 1, src,
        "compiled decoder graph takes inputs besides input_ids and the pasts");
  reset();
}

Decoder::~Decoder() = default;
Decoder::Decoder(Decoder&&) noexcept = default;

void Decoder::reset() {
  pos_ = 0;
  outs_.clear();
  outputs_.clear();
  outputs_current_ = true;
  pasts_.clear();
  for (const DecoderSignature::Cache& c : sig_.cache)
    pasts_.push_back(Tensor::zeros(DType::f32, {1, c.heads, 0, c.head_dim}));
}

const std::map<std::string, Tensor>& Decoder::outputs() const {
  if (!outputs_current_) {
    outputs_.clear();
    const std::vector<std::string>& names = ex_->output_names();
    for (size_t i = 0; i < outs_.size(); ++i) outputs_[names[i]] = outs_[i];
    for (size_t c = 0; c < present_output_.size(); ++c)
      outputs_[names[present_output_[c]]] = pasts_[c];
    outputs_current_ = true;
  }
  return outputs_;
}

std::vector<float> Decoder::forward(std::span<const int32_t> tokens) {
  // Messages are built only on failure (this runs once per token).
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n <= 0) throw Error("decoder", "forward needs at least one token");
  if (sig_.context != 0 && pos_ + n > sig_.context)
    throw Error("decoder", "sequence of " + std::to_string(pos_ + n) +
                               " positions passes the context length " +
                               std::to_string(sig_.context));
  Tensor ids = Tensor::zeros(DType::i64, {1, n});
  int64_t* p = ids.mutable_data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= sig_.vocab)
      throw Error("decoder", "token " + std::to_string(t) + " is outside the vocabulary of " +
                                 std::to_string(sig_.vocab));
    p[i] = t;
  }
  // The pasts move into the run; the presents it returns become the next pasts.
  std::vector<Tensor> feeds(ex_->input_names().size());
  feeds[ids_input_] = std::move(ids);
  for (size_t c = 0; c < pasts_.size(); ++c) feeds[past_input_[c]] = std::move(pasts_[c]);
  try {
    outs_ = ex_->run_ordered(std::move(feeds));
  } catch (...) {
    reset();  // the pasts went into the failed run
    throw;
  }
  for (size_t c = 0; c < pasts_.size(); ++c) pasts_[c] = std::move(outs_[present_output_[c]]);
  outputs_current_ = false;
  pos_ += static_cast<int32_t>(n);
  const Tensor& out = outs_[logits_output_];
  Tensor held;
  const Tensor& logits = out.is_contiguous() && out.is_aligned() ? out : (held = out.contiguous());
  if (logits.dtype() != DType::f32 || logits.numel() != n * sig_.vocab)
    throw Error("decoder", "logits of shape " + shape_to_string(logits.shape()) +
                               ", expected [1, " + std::to_string(n) + ", " +
                               std::to_string(sig_.vocab) + "]");
  const float* l = logits.data<float>();
  return std::vector<float>(l, l + n * sig_.vocab);
}

std::vector<int32_t> generate_greedy(Decoder& decoder, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token) {
  check(!prompt.empty(), "generate", "the prompt is empty (give at least BOS)");
  check(n_tokens >= 0, "generate", "the token count is negative");
  const int64_t context = decoder.signature().context;
  check(context == 0 || static_cast<int64_t>(prompt.size()) + n_tokens <= context + 1, "generate",
        "prompt of " + std::to_string(prompt.size()) + " tokens + " + std::to_string(n_tokens) +
            " new tokens passes the context length " + std::to_string(context));
  decoder.reset();
  const size_t vocab = static_cast<size_t>(decoder.signature().vocab);
  std::vector<float> logits = decoder.forward(prompt);
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n_tokens; ++i) {
    const float* last = logits.data() + (logits.size() - vocab);
    // No source: the caller knows the file (attribute_errors).
    if (std::any_of(last, last + vocab, [](float v) { return std::isnan(v); }))
      throw Error("", fmt::format("the logits of generated token {} hold NaN (a weight or an "
                                  "activation of the model is not finite)",
                                  i + 1));
    const auto next = static_cast<int32_t>(std::max_element(last, last + vocab) - last);
    out.push_back(next);
    if (next == stop_token || i + 1 == n_tokens) break;
    logits = decoder.forward({&out.back(), 1});
  }
  return out;
}

std::vector<int32_t> generate_greedy(const graph::Model& model, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token) {
  check(!prompt.empty(), "generate", "the prompt is empty (give at least BOS)");
  Decoder d(model);
  return generate_greedy(d, prompt, n_tokens, stop_token);
}

std::map<std::string, std::string> linear_inputs(const graph::Model& model) {
  std::map<std::string, std::string> out;
  const graph::Graph& g = model.graph;
  for (const graph::Node& n : g.nodes) {
    if (!n.domain.empty() || (n.op_type != "Gemm" && n.op_type != "MatMul") || n.inputs.size() < 2)
      continue;
    const std::string& w = n.inputs[1];
    auto it = g.initializers.find(w);
    if (it == g.initializers.end() || it->second.rank() != 2 || !is_floating(it->second.dtype()) ||
        w.rfind(kLlamaConstantPrefix, 0) == 0)
      continue;
    if (n.op_type == "Gemm" && n.attr_int("transA", 0) != 0) continue;
    out.emplace(w, n.inputs[0]);
  }
  return out;
}

std::vector<std::string> linear_weights(const graph::Model& model) {
  const std::map<std::string, std::string> inputs = linear_inputs(model);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const graph::Node& n : model.graph.nodes)
    if (n.inputs.size() >= 2 && inputs.count(n.inputs[1]) && seen.insert(n.inputs[1]).second &&
        n.domain.empty() && (n.op_type == "Gemm" || n.op_type == "MatMul"))
      names.push_back(n.inputs[1]);
  return names;
}

}  // namespace tailor::llm
