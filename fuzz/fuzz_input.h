// Shared by the fuzz targets: hands a fuzzer's input to a reader as a file (an
// in-memory memfd reached through /proc/self/fd, rewritten for each input, so
// no disk I/O), and reads every byte a reader claims to hold.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"

namespace tailor::fuzz {

/// Path of a file holding exactly `data[0, size)`. Valid until the next call.
inline std::string input_file(const uint8_t* data, size_t size) {
  static int fd = -1;
  static std::string path;
  if (fd < 0) {
    fd = ::memfd_create("tailor-fuzz", 0);
    if (fd < 0) std::abort();
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  if (::ftruncate(fd, 0) != 0 ||
      (size && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)))
    std::abort();
  return path;
}

/// Reads every byte of every weight (graph::weights of `m`) and converts small
/// ones to f32, so a view reaching past its storage faults under AddressSanitizer.
inline void touch_weights(const graph::Model& m) {
  unsigned sum = 0;
  for (const graph::WeightView& w : graph::weights(m)) {
    const std::byte* p = w.tensor.raw();
    for (size_t i = 0; i < w.tensor.nbytes(); ++i) sum += static_cast<unsigned>(p[i]);
    if (w.tensor.numel() <= 4096) sum += static_cast<unsigned>(w.tensor.to_f32_vector().size());
    if (w.layout != WeightLayout::none && w.tensor.numel() <= 4096)
      sum += static_cast<unsigned>(w.out_in().numel());
  }
  volatile unsigned sink = sum;
  (void)sink;
}

}  // namespace tailor::fuzz
