#include "tailor/core/error.h"

#include "tailor/core/text.h"

namespace tailor {
namespace {
// Each part is cut to kMaxPart bytes with control bytes escaped, so a hostile
// name can neither break the line nor flood it.
constexpr size_t kMaxPart = 512;
std::string printable(const std::string& s) {
  return escape_control(s, kMaxPart);
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
