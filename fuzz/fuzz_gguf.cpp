// libFuzzer target: read_gguf and read_gguf_tensors (which also reads Q4_0 /
// Q8_0 blocks, then decoded by schemes::from_ggml_blocks) on arbitrary bytes
// must give a model / tensors or a tailor::Error; crashes, sanitizer reports
// and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "tailor/core/error.h"
#include "tailor/io/gguf.h"
#include "tailor/schemes/ggml_blocks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tailor::fuzz::input_file(data, size);
  try {
    tailor::fuzz::touch_weights(tailor::read_gguf(path));
  } catch (const tailor::Error&) {
  }
  try {
    for (const tailor::GgufTensor& t : tailor::read_gguf_tensors(path)) {
      if (t.shape.size() != 2 || t.data.nbytes() > (size_t{1} << 20)) continue;
      const std::string label = t.type == tailor::GgmlType::q4_0   ? "q4_0"
                                : t.type == tailor::GgmlType::q8_0 ? "q8_0"
                                                                   : "";
      if (label.empty()) continue;
      tailor::schemes::from_ggml_blocks(label, t.shape[0], t.shape[1],
                                        reinterpret_cast<const uint8_t*>(t.data.raw()),
                                        t.data.nbytes())
          ->decode();
    }
  } catch (const tailor::Error&) {
  }
  return 0;
}
