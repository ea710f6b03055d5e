// Shared helpers of the kernel tests: seeded random data and a comparison
// against a double-precision reference with an error bound scaled by the
// magnitude of the summed terms.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tailor/core/rng.h"

namespace tailor::runtime::kernels::testing {

/// n values uniform in [−1, 1) from `seed`.
inline std::vector<float> random_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

/// Expects |got[i] − want[i]| ≤ rel·mag[i] + abs_tol for every i, where mag[i]
/// is Σ|terms| of the reference sum (so the bound follows the f32 rounding of
/// a sum in any order: ≤ K·ε·Σ|terms| for K terms, ~√K·ε typically).
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                         const std::vector<double>& mag, double rel, double abs_tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * mag[i] + abs_tol;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << ", want " << want[i]
                    << " (tolerance " << tol << ")";
      if (++reported == 5) return;
    }
  }
}

}  // namespace tailor::runtime::kernels::testing
