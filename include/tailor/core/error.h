// The one exception type of tailor: a failure with the file (or other source)
// it concerns and what was expected and found.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

namespace tailor {

/// Error raised for bad input and failed operations. `what()` is one line:
/// "<source>: <message>" (or just the message when no source is known), with
/// control bytes written as \xHH and each part cut to 512 bytes, so the CLI
/// can print it as is and exit with code 2.
class Error : public std::runtime_error {
 public:
  /// `source`: the file path (or tensor/node name) the problem is in; may be empty.
  /// `message`: what is wrong, with the expected and found values where known.
  Error(std::string source, std::string message);

  const std::string& source() const noexcept { return source_; }
  const std::string& message() const noexcept { return message_; }

 private:
  std::string source_;
  std::string message_;
};

/// Runs `fn`; an Error without a source (from core code that cannot know the
/// file) is rethrown with `source`, and std::bad_alloc becomes an Error naming
/// `source`. Readers wrap their work in it so every message names the file.
template <class F>
auto attribute_errors(const std::string& source, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    if (!e.source().empty()) throw;
    throw Error(source, e.message());
  } catch (const std::bad_alloc&) {
    throw Error(source, "out of memory");
  }
}

/// Throws Error(source, message) unless `condition` holds.
inline void check(bool condition, const std::string& source, const std::string& message) {
  if (!condition) throw Error(source, message);
}

}  // namespace tailor
