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
  // A branch-free scan first (all exponent bits set: Inf or NaN), then the
  // first bad element only when there is one.
  const auto* bits = reinterpret_cast<const uint32_t*>(p);
  uint32_t bad = 0;
  for (int64_t i = 0; i < m.numel(); ++i) bad |= uint32_t((bits[i] & 0x7f800000u) == 0x7f800000u);
  if (bad)
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

std::vector<float> permute(const float* src, const std::vector<int64_t>& dims,
                           const std::vector<int>& perm) {
  std::vector<float> out(static_cast<size_t>(product(dims, 0, dims.size())));
  permute_into(src, dims, perm, out.data());
  return out;
}

void permute_into(const float* src, const std::vector<int64_t>& dims, const std::vector<int>& perm,
                  float* dst) {
  const size_t n = dims.size();
  std::vector<int64_t> src_strides(n, 1), out_dims(n), step(n);
  for (size_t k = n; k-- > 1;) src_strides[k - 1] = src_strides[k] * dims[k];
  for (size_t k = 0; k < n; ++k) {
    out_dims[k] = dims[static_cast<size_t>(perm[k])];
    step[k] = src_strides[static_cast<size_t>(perm[k])];
  }
  const int64_t count = product(dims, 0, n);
  if (count == 0) return;
  // Odometer over the output's index, innermost axis fastest; `offset` tracks
  // the matching source element.
  std::vector<int64_t> idx(n, 0);
  int64_t offset = 0;
  for (float* v = dst; v != dst + count; ++v) {
    *v = src[offset];
    for (size_t k = n; k-- > 0;) {
      offset += step[k];
      if (++idx[k] < out_dims[k]) break;
      offset -= step[k] * out_dims[k];
      idx[k] = 0;
    }
  }
}

int64_t product(const std::vector<int64_t>& v, size_t first, size_t last) {
  int64_t p = 1;
  for (size_t i = first; i < last; ++i) p *= v[i];
  return p;
}

}  // namespace tailor::schemes::detail
