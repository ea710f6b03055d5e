// libFuzzer target for the ONNX reader: each input is written to model.onnx in
// a private temporary folder (so external data paths resolve next to it) and
// read with read_onnx. tailor::Error is the expected outcome for bad input;
// anything else (a crash, a sanitizer report, another exception) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/onnx.h"

namespace {

/// The private folder (mkdtemp fills in the X's); a plain array, so it outlives
/// every static destructor and the exit handler can still read it.
char g_dir[] = "/tmp/tailor-fuzz-onnx-XXXXXX";

std::string file_in_dir() {
  return std::string(g_dir) + "/model.onnx";
}

/// Removes the model file and its folder (registered with atexit).
void remove_folder() {
  std::remove(file_in_dir().c_str());
  ::rmdir(g_dir);
}

/// Path of the model file; creates the folder on first use.
const std::string& model_path() {
  static const std::string path = [] {
    if (!::mkdtemp(g_dir)) {
      std::perror("fuzz_onnx: mkdtemp");
      std::abort();
    }
    std::atexit(remove_folder);
    return file_in_dir();
  }();
  return path;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror("fuzz_onnx: fopen");
    std::abort();
  }
  if (size && std::fwrite(data, 1, size, f) != size) {
    std::perror("fuzz_onnx: fwrite");
    std::abort();
  }
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = model_path();
  write_file(path, data, size);
  try {
    const tailor::graph::Model m = tailor::read_onnx(path);
    // Touch every weight's data and [out, in] view so bad views surface here.
    for (const tailor::graph::WeightView& w : tailor::graph::weights(m)) {
      if (w.tensor.numel() > 0) (void)w.tensor.to_f32_vector();
      if (w.layout != tailor::WeightLayout::none) (void)w.out_in();
    }
  } catch (const tailor::Error&) {
  }
  return 0;
}
