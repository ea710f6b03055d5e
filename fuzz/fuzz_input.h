// Hands a fuzzer's input to a reader as a file: an in-memory file (memfd)
// reached through /proc/self/fd, rewritten for each input, so no disk I/O.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

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

}  // namespace tailor::fuzz
