// Next-token logits of a GGUF model by llama.cpp, for bench/llamacpp/check.sh.
// Compiled against a llama.cpp build (libllama, its public llama.h only).
//
// usage: logits_driver MODEL.gguf TOKENS.i32 N_SEQ LEN OUT.f32
// TOKENS.i32: N_SEQ·LEN little-endian int32 token ids; OUT.f32 receives
// N_SEQ·LEN·n_vocab f32 logits (position t: the logits after tokens 0..t),
// each sequence decoded in one batch by a fresh context (no KV state shared)
// with an f32 KV cache (llama.cpp's default f16 cache would round K and V).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL.gguf TOKENS.i32 N_SEQ LEN OUT.f32\n", argv[0]);
    return 2;
  }
  const int n_seq = std::atoi(argv[3]), len = std::atoi(argv[4]);
  std::vector<llama_token> tokens(static_cast<size_t>(n_seq) * len);
  FILE* in = std::fopen(argv[2], "rb");
  if (!in || std::fread(tokens.data(), sizeof(llama_token), tokens.size(), in) != tokens.size()) {
    std::fprintf(stderr, "%s: cannot read %zu tokens\n", argv[2], tokens.size());
    return 2;
  }
  std::fclose(in);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "%s: llama.cpp cannot load the model\n", argv[1]);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE* out = std::fopen(argv[5], "wb");
  if (!out) return 2;
  for (int s = 0; s < n_seq; ++s) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(len);
    cp.n_batch = static_cast<uint32_t>(len);
    cp.n_ubatch = static_cast<uint32_t>(len);
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;  // an f32 KV cache: no f16 rounding of keys and values
    cp.type_v = GGML_TYPE_F32;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    llama_batch batch = llama_batch_init(len, 0, 1);
    for (int t = 0; t < len; ++t) {
      batch.token[t] = tokens[static_cast<size_t>(s) * len + t];
      batch.pos[t] = t;
      batch.n_seq_id[t] = 1;
      batch.seq_id[t][0] = 0;
      batch.logits[t] = 1;
    }
    batch.n_tokens = len;
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "llama_decode failed on sequence %d\n", s);
      return 1;
    }
    for (int t = 0; t < len; ++t)
      std::fwrite(llama_get_logits_ith(ctx, t), sizeof(float), static_cast<size_t>(n_vocab), out);
    llama_batch_free(batch);
    llama_free(ctx);
  }
  std::fclose(out);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
