#include "tailor/core/warning.h"

#include <cstdio>

#include "tailor/core/error.h"

namespace tailor {

void warn(const std::string& source, const std::string& message) {
  // One write, so that lines from concurrent workers do not interleave.
  const std::string line = "tailor: warning: " + std::string(Error(source, message).what()) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tailor
