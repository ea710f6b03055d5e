#include "tailor/core/finite.h"

#include <cmath>
#include <vector>

namespace tailor {

NonFinite find_non_finite(const Tensor& t) {
  NonFinite r;
  if (!is_floating(t.dtype())) return r;
  const std::vector<float> v = t.to_f32_vector();
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isfinite(v[i])) continue;
    if (r.count++ == 0) {
      r.first = static_cast<int64_t>(i);
      r.first_value = v[i];
    }
  }
  return r;
}

}  // namespace tailor
