#include "tailor/core/error.h"

#include <algorithm>

namespace tailor {
namespace {
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}
std::string compose(const std::string& source, const std::string& message) {
  return one_line(source.empty() ? message : source + ": " + message);
}
}  // namespace

Error::Error(std::string source, std::string message)
    : std::runtime_error(compose(source, message)),
      source_(std::move(source)),
      message_(std::move(message)) {}

}  // namespace tailor
