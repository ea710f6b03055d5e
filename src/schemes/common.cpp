#include "common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tailor/core/error.h"

namespace tailor::schemes::detail {

MatrixDims matrix_dims(const Shape& shape) {
  if (shape.size() < 2) return {};
  int64_t in = 1;
  for (size_t i = 1; i < shape.size(); ++i) in *= shape[i];
  return {shape[0], in};
}

bool is_weight_shape(const Shape& shape) {
  if (shape.size() < 2) return false;
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d > 0; });
}

Tensor weight_matrix(const Tensor& w, std::string_view label) {
  const std::string who(label);
  check(is_weight_shape(w.shape()), who,
        fmt::format("expected a weight of rank >= 2 with no empty dimension, found {}",
                    shape_to_string(w.shape())));
  check(is_floating(w.dtype()), who,
        fmt::format("expected a floating-point weight, found {}", dtype_name(w.dtype())));
  const MatrixDims d = matrix_dims(w.shape());
  Tensor m = w.dtype() == DType::f32 ? w.contiguous() : w.to(DType::f32);
  m = m.reshape({d.out, d.in});
  const float* p = m.data<float>();
  for (int64_t i = 0; i < m.numel(); ++i)
    if (!std::isfinite(p[i]))
      throw Error(who, fmt::format("weight element {} (row {}, column {}) is not finite", i,
                                   i / d.in, i % d.in));
  return m;
}

linalg::Matrix to_matrix(const float* data, int64_t rows, int64_t cols) {
  return Eigen::Map<const linalg::Matrix>(data, rows, cols);
}

Tensor to_tensor(const linalg::Matrix& m, Shape shape) {
  return Tensor::from_f32(std::move(shape), std::span<const float>(m.data(), m.size()));
}

std::vector<int64_t> balanced_factors(int64_t n, int count) {
  std::vector<int64_t> primes;
  for (int64_t p = 2, r = n; r > 1; ++p) {
    if (p * p > r) {
      primes.push_back(r);
      break;
    }
    while (r % p == 0) {
      primes.push_back(p);
      r /= p;
    }
  }
  std::sort(primes.rbegin(), primes.rend());
  std::vector<int64_t> f(static_cast<size_t>(std::max(count, 1)), 1);
  for (int64_t p : primes) *std::min_element(f.begin(), f.end()) *= p;
  std::sort(f.rbegin(), f.rend());
  return f;
}

}  // namespace tailor::schemes::detail
