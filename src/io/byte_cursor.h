// A bounds-checked little-endian reader over bytes in memory, shared by the
// binary readers (GGUF, llama2.c). Every read checks the bytes remaining first
// and throws Error naming the file, so a count or length read from the file is
// never trusted before it is compared with what the file holds.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "tailor/core/checked.h"
#include "tailor/core/error.h"

namespace tailor::io_detail {

static_assert(std::endian::native == std::endian::little,
              "the binary readers assume a little-endian host");

/// `s` for an error message: quoted, control and non-ASCII bytes as \xHH, cut
/// after 80 bytes (names read from a file may hold anything).
inline std::string quoted(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "'";
  const size_t n = s.size() < 80 ? s.size() : 80;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > n) out += "...";
  return out + "'";
}

/// Reads fixed-size little-endian values and length-prefixed strings from
/// [data, data + size); `path` names the file in errors.
class ByteCursor {
 public:
  ByteCursor(const std::byte* data, size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return path_; }

  /// Throws Error unless `n` more bytes are there; `what` says what was being read.
  void need(size_t n, std::string_view what) const {
    if (n > remaining())
      throw Error(path_, "file truncated: " + std::string(what) + " needs " + std::to_string(n) +
                             " bytes at offset " + std::to_string(pos_) + ", only " +
                             std::to_string(remaining()) + " remain");
  }

  template <class T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  /// `n` bytes as a view into the data.
  std::string_view bytes(size_t n, std::string_view what) {
    need(n, what);
    std::string_view v(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return v;
  }

  void skip(size_t n, std::string_view what) {
    need(n, what);
    pos_ += n;
  }

 private:
  const std::byte* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& path_;
};

/// a · b, or throws Error(path, "size of <what> overflows 64 bits") (core/checked.h).
inline uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& path,
                            std::string_view what) {
  return tailor::checked_mul(a, b, path, "size of " + std::string(what));
}

/// a + b, or throws Error(path, "size of <what> overflows 64 bits") (core/checked.h).
inline uint64_t checked_add(uint64_t a, uint64_t b, const std::string& path,
                            std::string_view what) {
  return tailor::checked_add(a, b, path, "size of " + std::string(what));
}

}  // namespace tailor::io_detail
