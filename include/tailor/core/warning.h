// Warnings: a problem tailor works around, printed as one line on stderr.
#pragma once

#include <string>

namespace tailor {

/// Prints "tailor: warning: <source>: <message>" (as Error formats it: one
/// line, control bytes escaped) to stderr in one write.
void warn(const std::string& source, const std::string& message);

}  // namespace tailor
