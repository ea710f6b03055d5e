// Composite compressed weights: a sum of simpler stored weights,
// Ŵ = base + A·B (docs/schemes.md, "Composites").
#pragma once

#include <memory>
#include <optional>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// The parts of a composite weight [out, in]: base [out, in] (absent for
/// quantized low-rank factors), A [out, R] and B [R, in]. Each part is an
/// Encoded of its own: a reference quantizer's form (label "int8-mse",
/// "int4-mse", …; per-row f16 scales) or "f16" (factor "w", f16 [rows, cols]).
struct CompositeParts {
  std::shared_ptr<const Encoded> base;
  std::shared_ptr<const Encoded> a;
  std::shared_ptr<const Encoded> b;
};

/// The parts of `e` when it is a composite (labels lowrank-q{8,4}-r{R},
/// int{4,3}+r{R}[-q8]); nullopt otherwise.
std::optional<CompositeParts> composite_parts(const Encoded& e);

}  // namespace tailor::schemes
