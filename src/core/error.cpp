#include "tailor/core/error.h"

namespace tailor {
namespace {
// Control bytes (newlines, escapes, NUL) become \xHH, and each part is cut to
// kMaxPart bytes, so a hostile name can neither break the line nor flood it.
constexpr size_t kMaxPart = 512;
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= kMaxPart) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}
std::string compose(const std::string& source, const std::string& message) {
  return source.empty() ? printable(message) : printable(source) + ": " + printable(message);
}
}  // namespace

Error::Error(std::string source, std::string message)
    : std::runtime_error(compose(source, message)),
      source_(std::move(source)),
      message_(std::move(message)) {}

}  // namespace tailor
