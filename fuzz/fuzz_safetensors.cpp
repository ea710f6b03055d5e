// libFuzzer target: read_safetensors on arbitrary bytes must either succeed or
// throw tailor::Error; crashes, sanitizer reports and hangs are bugs.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tailor::ModelFile m = tailor::read_safetensors(tailor::fuzz::input_file(data, size));
    // Touch every byte the reader claims, so an out-of-range view is caught.
    volatile uint8_t sink = 0;
    for (const auto& w : m.weights)
      for (size_t i = 0; i < w.tensor.nbytes(); ++i)
        sink ^= static_cast<uint8_t>(w.tensor.raw()[i]);
  } catch (const tailor::Error&) {
  }
  return 0;
}
