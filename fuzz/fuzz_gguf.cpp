// libFuzzer target for read_gguf: any input must give a ModelFile or a
// tailor::Error, never a crash, hang or other exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tailor/core/error.h"
#include "tailor/io/gguf.h"

namespace {

// The input file of this process: written for each input, removed after it.
const std::string& input_path() {
  static const std::string path = "/tmp/tailor-fuzz-gguf-" + std::to_string(::getpid()) + ".bin";
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
  try {
    const tailor::ModelFile m = tailor::read_gguf(input_path());
    // Touch every byte of every tensor, so a view past the mapping would fault.
    unsigned sum = 0;
    for (const tailor::Weight& w : m.weights) {
      const std::byte* p = w.tensor.raw();
      for (size_t i = 0; i < w.tensor.nbytes(); ++i) sum += static_cast<unsigned>(p[i]);
      if (w.tensor.numel() <= 4096) sum += static_cast<unsigned>(w.tensor.to_f32_vector().size());
    }
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const tailor::Error&) {
  }
  std::remove(input_path().c_str());
  return 0;
}
