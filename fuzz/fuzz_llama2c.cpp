// libFuzzer target: read_llama2c and Llama2cTokenizer (load with a 512-token
// vocabulary, then encode and decode) on arbitrary bytes must give a result or
// a tailor::Error; crashes, sanitizer reports and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "tailor/core/error.h"
#include "tailor/io/llama2c.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tailor::fuzz::input_file(data, size);
  try {
    tailor::fuzz::touch_weights(tailor::read_llama2c(path));
  } catch (const tailor::Error&) {
  }
  try {
    const auto tok = tailor::Llama2cTokenizer::load(path, 512);
    const std::vector<int32_t> ids =
        tok.encode("Once upon a time, \xC3\xA9\xF0\x9F\x98\x80!", true, true);
    size_t sum = 0;
    for (size_t i = 1; i < ids.size(); ++i) sum += tok.decode(ids[i - 1], ids[i]).size();
    volatile size_t sink = sum;
    (void)sink;
  } catch (const tailor::Error&) {
  }
  return 0;
}
