// SHA-256 digests (FIPS 180-4) of files and byte strings, computed by
// OpenSSL's EVP interface; used to key caches by content.
#pragma once

#include <string>
#include <string_view>

namespace tailor {

/// Lower-case hex SHA-256 (64 characters) of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// Lower-case hex SHA-256 of the file at `path`, read in 1 MiB chunks (any
/// size). Throws Error naming `path` when it cannot be opened or read, or is
/// not a regular file (FIFOs and devices are refused, never waited on).
std::string sha256_file(const std::string& path);

}  // namespace tailor
