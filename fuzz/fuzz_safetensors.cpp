// libFuzzer target: read_safetensors on arbitrary bytes must give a graph::Model
// or a tailor::Error; crashes, sanitizer reports and hangs are bugs.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tailor::fuzz::touch_weights(tailor::read_safetensors(tailor::fuzz::input_file(data, size)));
  } catch (const tailor::Error&) {
  }
  return 0;
}
