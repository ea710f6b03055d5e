#include "tailor/core/warning.h"

#include <iostream>

#include "tailor/core/error.h"

namespace tailor {

void warn(const std::string& source, const std::string& message) {
  std::cerr << "tailor: warning: " << Error(source, message).what() << "\n";
}

}  // namespace tailor
