// libFuzzer target for read_llama2c and Llama2cTokenizer (load with a
// 512-token vocabulary, then encode and decode): any input must give a result
// or a tailor::Error, never a crash, hang or other exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/io/llama2c.h"

namespace {

// The input file of this process: written for each input, removed after it.
const std::string& input_path() {
  static const std::string path = "/tmp/tailor-fuzz-llama2c-" + std::to_string(::getpid()) + ".bin";
  return path;
}

void write_input(const uint8_t* data, size_t size) {
  FILE* f = std::fopen(input_path().c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_input(data, size);
  unsigned sum = 0;
  try {
    const tailor::ModelFile m = tailor::read_llama2c(input_path());
    // Touch every byte of every tensor, so a view past the mapping would fault.
    for (const tailor::Weight& w : m.weights) {
      const std::byte* p = w.tensor.raw();
      for (size_t i = 0; i < w.tensor.nbytes(); ++i) sum += static_cast<unsigned>(p[i]);
    }
  } catch (const tailor::Error&) {
  }
  try {
    const auto tok = tailor::Llama2cTokenizer::load(input_path(), 512);
    const std::vector<int32_t> ids =
        tok.encode("Once upon a time, \xC3\xA9\xF0\x9F\x98\x80!", true, true);
    for (size_t i = 1; i < ids.size(); ++i) sum += tok.decode(ids[i - 1], ids[i]).size();
  } catch (const tailor::Error&) {
  }
  volatile unsigned sink = sum;
  (void)sink;
  std::remove(input_path().c_str());
  return 0;
}
