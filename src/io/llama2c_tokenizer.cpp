// llama2.c's tokenizer (run.c: build_tokenizer, encode, decode): a
// SentencePiece-style BPE vocabulary with scores and byte fallback.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/byte_cursor.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"

namespace tailor {
namespace {

constexpr int32_t kBos = 1;
constexpr int32_t kEos = 2;
constexpr int32_t kByteFallbackBase = 3;  // token 3 + b is "<0xHH>" for byte b

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string find_llama2c_tokenizer(const std::string& model_path, const std::string& given,
                                   int32_t vocab) {
  if (!given.empty()) return given;
  namespace fs = std::filesystem;
  const fs::path p(model_path);
  const fs::path folder = fs::is_directory(p) ? p : p.parent_path();
  for (const std::string& name :
       {"tok" + std::to_string(vocab) + ".bin", std::string("tokenizer.bin")}) {
    const fs::path candidate = folder / name;
    if (fs::is_regular_file(candidate)) return candidate.string();
  }
  throw Error(model_path, "no llama2.c tokenizer found beside the model (tok" +
                              std::to_string(vocab) + ".bin or tokenizer.bin); give --tokenizer");
}

Llama2cTokenizer load_llama_tokenizer(const std::string& model_path, const std::string& given,
                                      int32_t vocab) {
  if (given.empty() && std::filesystem::path(model_path).extension() == ".gguf") {
    if (std::optional<Llama2cTokenizer> t = read_gguf_tokenizer(model_path)) {
      check(static_cast<int64_t>(t->vocab.size()) == vocab, model_path,
            "its tokenizer holds " + std::to_string(t->vocab.size()) +
                " tokens, the model's vocabulary " + std::to_string(vocab));
      return std::move(*t);
    }
  }
  return Llama2cTokenizer::load(find_llama2c_tokenizer(model_path, given, vocab), vocab);
}

Llama2cTokenizer Llama2cTokenizer::load(const std::string& path, int32_t vocab_size) {
  if (vocab_size <= 0)
    throw Error(path,
                "tokenizer vocabulary size " + std::to_string(vocab_size) + " must be positive");
  const std::string file = read_file(path);
  io_detail::ByteCursor c(reinterpret_cast<const std::byte*>(file.data()), file.size(), path);
  Llama2cTokenizer t;
  t.max_token_length = c.read<int32_t>("max_token_length");
  if (t.max_token_length < 0)
    throw Error(path, "tokenizer max_token_length is " + std::to_string(t.max_token_length) +
                          " (must not be negative)");
  // Each token takes at least 8 bytes (score and length), so a vocabulary
  // that cannot fit is refused before anything is allocated for it.
  if (static_cast<uint64_t>(vocab_size) > c.remaining() / 8)
    throw Error(path, "tokenizer file truncated: " + std::to_string(vocab_size) +
                          " tokens need at least " + std::to_string(8ull * vocab_size) +
                          " bytes after the header, " + std::to_string(c.remaining()) + " remain");
  t.vocab.reserve(static_cast<size_t>(vocab_size));
  t.scores.reserve(static_cast<size_t>(vocab_size));
  for (int32_t i = 0; i < vocab_size; ++i) {
    t.scores.push_back(c.read<float>("token score"));
    const auto len = c.read<int32_t>("token length");
    if (len < 0)
      throw Error(path,
                  "token " + std::to_string(i) + " has negative length " + std::to_string(len));
    if (static_cast<size_t>(len) > c.remaining())
      throw Error(path, "file truncated: token " + std::to_string(i) + " of length " +
                            std::to_string(len) + " at offset " + std::to_string(c.pos()) +
                            " exceeds the " + std::to_string(c.remaining()) + " bytes remaining");
    if (len > t.max_token_length)
      throw Error(path, "token " + std::to_string(i) + " has length " + std::to_string(len) +
                            ", above the file's max_token_length " +
                            std::to_string(t.max_token_length));
    t.vocab.emplace_back(c.bytes(static_cast<size_t>(len), "token bytes"));
  }
  // llama2.c's tokenizer.py writes exactly the vocabulary: bytes left over
  // mean a tokenizer for a larger vocabulary, not this model's.
  if (c.remaining() > 0)
    throw Error(path, std::to_string(c.remaining()) + " bytes follow the model's " +
                          std::to_string(vocab_size) +
                          " tokens: the tokenizer is for a larger vocabulary");
  return t;
}

std::vector<int32_t> Llama2cTokenizer::encode(const std::string& text, bool bos, bool eos) const {
  const auto n_vocab = static_cast<int32_t>(vocab.size());
  // run.c sorts the vocabulary and binary-searches it; a hash map gives the
  // same answers (for a repeated piece, the lowest id).
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(vocab.size());
  for (int32_t i = 0; i < n_vocab; ++i) ids.emplace(vocab[static_cast<size_t>(i)], i);
  auto lookup = [&](std::string_view s) {
    const auto it = ids.find(s);
    return it == ids.end() ? -1 : it->second;
  };
  auto byte_token = [&](unsigned char b) {
    const int32_t id = kByteFallbackBase + b;
    if (id >= n_vocab)
      throw Error("", "byte fallback token " + std::to_string(id) + " for byte " +
                          std::to_string(b) + " is outside the vocabulary of " +
                          std::to_string(n_vocab) + " tokens");
    return id;
  };

  std::vector<int32_t> tokens;
  if (bos) tokens.push_back(kBos);
  // SentencePiece's add_dummy_prefix: a leading space token for non-empty
  // text. (run.c would push -1 if " " were missing; its byte token is used then.)
  if (!text.empty()) {
    const int32_t space = lookup(" ");
    tokens.push_back(space >= 0 ? space : byte_token(' '));
  }
  // One token per UTF-8 code point when the vocabulary has it, otherwise one
  // byte token per byte. As in run.c, a code point is a leading byte and at
  // most 3 continuation bytes (0b10xxxxxx); longer runs are split.
  std::string buf;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if ((ch & 0xC0) != 0x80) buf.clear();
    buf += static_cast<char>(ch);
    const bool next_continues =
        i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80;
    if (next_continues && buf.size() < 4) continue;
    const int32_t id = lookup(buf);
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      for (char b : buf) tokens.push_back(byte_token(static_cast<unsigned char>(b)));
    }
    buf.clear();
  }
  // Merge the adjacent pair whose concatenation is in the vocabulary with the
  // highest score (the first such pair on ties), until none is.
  std::string pair;
  for (;;) {
    float best_score = -1e10f;
    int32_t best_id = -1;
    size_t best_idx = 0;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      pair = vocab[static_cast<size_t>(tokens[i])];
      pair += vocab[static_cast<size_t>(tokens[i + 1])];
      const int32_t id = lookup(pair);
      if (id >= 0 && scores[static_cast<size_t>(id)] > best_score) {
        best_score = scores[static_cast<size_t>(id)];
        best_id = id;
        best_idx = i;
      }
    }
    if (best_id < 0) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_idx) + 1);
  }
  if (eos) tokens.push_back(kEos);
  return tokens;
}

std::string Llama2cTokenizer::decode(int32_t prev, int32_t token) const {
  if (token < 0 || static_cast<size_t>(token) >= vocab.size())
    throw Error("", "token " + std::to_string(token) + " is outside the vocabulary of " +
                        std::to_string(vocab.size()) + " tokens");
  std::string_view piece = vocab[static_cast<size_t>(token)];
  // After BOS, SentencePiece's decoder drops the leading space.
  if (prev == kBos && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  // Raw-byte tokens "<0xHH>" stand for the byte itself.
  if (piece.size() == 6 && piece.starts_with("<0x") && piece[5] == '>') {
    const int hi = hex_digit(piece[3]), lo = hex_digit(piece[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  return std::string(piece);
}

}  // namespace tailor
