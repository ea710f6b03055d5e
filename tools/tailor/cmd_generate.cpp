// tailor generate: greedy text from a llama checkpoint; tailor kld: KL
// divergence of a compressed copy against the original.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/warning.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/load_model.h"
#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"
#include "tailor/plan/plan.h"
#include "tailor/runtime/executor.h"

namespace tailor::cli {
namespace {

/// Bytes of the checkpoint's weights in `g` (initializers but the llama
/// builder's constants), as f32.
uint64_t weight_bytes(const graph::Model& g) {
  uint64_t total = 0;
  for (const auto& [name, t] : g.graph.initializers)
    if (name.rfind(kLlamaConstantPrefix, 0) != 0) total += t.nbytes();
  return total;
}

}  // namespace

void add_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "generate", "Greedy text continuation from a llama checkpoint (llama2.c, HF folder, GGUF)");
  static std::string path, prompt = "Once upon a time", tokenizer;
  static int tokens = 64;
  static bool profile = false;
  cmd->add_option("MODEL", path, "llama checkpoint: llama2.c .bin, HF folder or .gguf")->required();
  cmd->add_option("--prompt", prompt, "Text after BOS (default \"Once upon a time\")");
  cmd->add_option("--tokens", tokens, "Tokens to generate (default 64; stops early at EOS)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--tokenizer", tokenizer,
                  "llama2.c tokenizer .bin (default: the one a .gguf holds, else tok{vocab}.bin or "
                  "tokenizer.bin beside MODEL)");
  cmd->add_flag("--profile", profile,
                "Print the decoding speed and the time per op type over the steps (stderr)");
  cmd->callback([] {
    graph::Model model = load_llama_graph(path);
    const llm::DecoderSignature sig = llm::decoder_signature(model);
    const auto vocab = static_cast<int32_t>(sig.vocab);
    const Llama2cTokenizer tok = load_llama_tokenizer(path, tokenizer, vocab);
    const std::vector<int32_t> ids = tok.encode(prompt, true, false);
    const int64_t room =
        sig.context > 0 ? sig.context + 1 - static_cast<int64_t>(ids.size()) : int64_t{tokens};
    check(room >= 1, "--prompt", "the prompt fills the context length");
    if (tokens > room)
      warn("--tokens", fmt::format("{} asked, but the context length {} leaves room for {} after "
                                   "the {}-token prompt: generating at most {}",
                                   tokens, sig.context, room, ids.size(), room));
    llm::Decoder decoder(std::move(model), {}, llm::llama_graph_passes());
    decoder.executor().set_profiling(profile);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> out = attribute_errors(path, [&] {
      return llm::generate_greedy(decoder, ids,
                                  static_cast<int32_t>(std::min<int64_t>(tokens, room)),
                                  /*stop_token=*/2);
    });
    if (profile) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const size_t steps = out.size();  // the prompt step, then one per token but the last
      std::cerr << fmt::format("{} tokens in {} steps, {:.3f} s: {:.1f} tokens/s, {} nodes\n",
                               out.size(), steps, s, static_cast<double>(out.size()) / s,
                               decoder.executor().model().graph.nodes.size());
      std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(
          decoder.executor().op_profile().begin(), decoder.executor().op_profile().end());
      std::sort(rows.begin(), rows.end(),
                [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
      for (const auto& [op, v] : rows)
        std::cerr << fmt::format("  {:<22} {:>9.3f} ms/step  {:>5} nodes\n", op,
                                 v.first / static_cast<double>(steps),
                                 v.second / static_cast<int64_t>(steps));
    }
    std::string text;
    int32_t prev = ids.back();
    for (size_t i = 1; i < ids.size(); ++i) text += tok.decode(ids[i - 1], ids[i]);
    for (int32_t t : out) {
      if (t == 2) break;
      text += tok.decode(prev, t);
      prev = t;
    }
    // Control bytes escaped, line breaks kept.
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
      std::cout << printable(text.substr(start, nl - start)) << "\n";
    std::cout << printable(text.substr(start)) << "\n";
  });
}

void add_kld(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "kld",
      "KL divergence and top-1 agreement of a compressed llama vs. the original, over sequences "
      "sampled from the original (llama.cpp's --kl-divergence statistics)");
  static std::string path, scheme, plan_path;
  static llm::CompareOptions options;
  static bool json = false;
  cmd->add_option("MODEL", path, "llama checkpoint: llama2.c .bin, HF folder or .gguf")->required();
  auto* s = cmd->add_option("--scheme", scheme,
                            "Encode every attention and FFN projection with this label "
                            "(e.g. int8, int4, lowrank-r16)");
  auto* p = cmd->add_option("--plan", plan_path, "Apply a plan.json (layer → label)");
  s->excludes(p);
  cmd->add_option("--sequences", options.sequences, "Sequences sampled from the original")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--length", options.length, "Tokens per sequence after BOS")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--seed", options.seed, "Sampling seed")->check(kUnsigned);
  cmd->add_flag("--json", json, "Print the result as JSON");
  cmd->callback([] {
    check(!scheme.empty() || !plan_path.empty(), "kld", "give --scheme or --plan");
    const graph::Model file = load_model(path);
    const LlamaCheckpoint ck = llama_checkpoint(file);
    const graph::Model original = llama_graph(ck.weights, ck.config, ck.pairing, path);
    plan::Plan plan;
    if (!plan_path.empty()) {
      plan = plan::read_plan(plan_path);
    } else {
      const std::vector<std::string> names = llm::linear_weights(original);
      for (size_t i = 0; i + 1 < names.size(); ++i)
        plan.choices.push_back({names[i], scheme});  // not the classifier
    }
    // The plan's layers encoded, then the same graph rewrite compress verifies
    // with (CompressedLinear nodes on the stored factors).
    std::vector<compress::EncodedLayer> layers = compress::encode_plan(file, plan, {}, 0x7a11);
    const std::vector<std::string> linears = llm::linear_weights(original);
    for (compress::EncodedLayer& l : layers) {
      check(std::find(linears.begin(), linears.end(), l.name) != linears.end(), l.name,
            "not a linear layer of the llama model");
      l.stored_dtype = DType::f32;  // the graph holds every weight as f32
    }
    const graph::Model compressed = compress::rewrite_tailor(original, layers);
    const auto t0 = std::chrono::steady_clock::now();
    const llm::CompareResult r = llm::compare_models(original, compressed, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t b0 = weight_bytes(original);
    uint64_t b1 = b0;
    for (const compress::EncodedLayer& l : layers)
      b1 = b1 - original.graph.initializers.at(l.name).nbytes() + l.encoded->bytes();
    if (json) {
      nlohmann::ordered_json j = {{"model", path},
                                  {"bytes_original", b0},
                                  {"bytes_compressed", b1},
                                  {"mean_kl", r.mean_kl},
                                  {"kl_stderr", r.kl_stderr},
                                  {"kl_median", r.kl_median},
                                  {"kl_p99", r.kl_p99},
                                  {"max_kl", r.max_kl},
                                  {"top1_agreement", r.top1_agreement},
                                  {"top1_stderr", r.top1_stderr},
                                  {"ppl_original", r.ppl_orig},
                                  {"ppl_compressed", r.ppl_comp},
                                  {"positions", r.positions},
                                  {"seed", options.seed},
                                  {"seconds", seconds}};
      std::cout << dump(j, 2) << "\n";
      return;
    }
    std::cout << fmt::format("bytes            {} -> {} ({:.1f}%)\n", with_commas(b0),
                             with_commas(b1), 100.0 * static_cast<double>(b1) / b0);
    std::cout << fmt::format(
        "mean KL          {:.6f} ± {:.6f} nats (median {:.6f}, 99% {:.4f}, max {:.4f})\n",
        r.mean_kl, r.kl_stderr, r.kl_median, r.kl_p99, r.max_kl);
    std::cout << fmt::format("same top-1       {:.2f}% ± {:.2f}%\n", 100 * r.top1_agreement,
                             100 * r.top1_stderr);
    std::cout << fmt::format("perplexity       {:.4f} original, {:.4f} compressed\n", r.ppl_orig,
                             r.ppl_comp);
    std::cout << fmt::format("positions        {} ({} sequences × {} tokens, seed {}), {:.2f} s\n",
                             r.positions, options.sequences, options.length, options.seed, seconds);
  });
}

}  // namespace tailor::cli
