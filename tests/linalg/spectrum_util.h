// Test matrices with a known spectrum, shared by the SVD and randomized QB tests.
#pragma once

#include <cstdint>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/linalg/blas.h"

namespace tailor::linalg::testing {

/// [m, n] matrix of independent N(0, 1) entries from Rng(seed).
inline Matrix gaussian(int64_t m, int64_t n, uint64_t seed) {
  Rng rng(seed);
  Matrix g(m, n);
  for (int64_t i = 0; i < g.size(); ++i) g.data()[i] = static_cast<float>(rng.normal());
  return g;
}

/// U·diag(sigma)·Vᵀ [m, n] with random orthonormal U [m, k], V [n, k]
/// (k = sigma.size()): its singular values are `sigma` by construction, so
/// the optimum of a truncation is known.
inline Matrix with_spectrum(int64_t m, int64_t n, const std::vector<double>& sigma, uint64_t seed) {
  const auto k = static_cast<int64_t>(sigma.size());
  const Matrix u = orthonormalize(gaussian(m, k, seed));
  const Matrix v = orthonormalize(gaussian(n, k, seed + 1));
  Matrix us = u;
  for (int64_t j = 0; j < k; ++j) us.col(j) *= static_cast<float>(sigma[static_cast<size_t>(j)]);
  return matmul(us, v, false, true);
}

}  // namespace tailor::linalg::testing
