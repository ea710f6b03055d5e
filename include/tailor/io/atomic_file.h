// Writing files so a failure never leaves a half-written output.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace tailor {

/// Writes `path` atomically: `write` fills a temporary file in the same
/// folder, which is flushed, fsync'ed and renamed over `path` (then the folder
/// is fsync'ed; permissions 0666 less the umask) only when
/// `write` returns and every byte reached the disk. On any failure (an
/// exception from `write`, a full disk) the temporary file is removed, the
/// previous `path` is untouched, and the exception propagates (I/O failures as
/// Error naming `path`).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

/// write_file_atomic with a ready buffer.
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Whole file into memory. Throws Error naming the file when it cannot be read
/// or is not a regular file (FIFOs and devices are refused, never waited on).
std::string read_file(const std::string& path);

}  // namespace tailor
