// Helpers the scheme encoders share: viewing a weight as a matrix, shape
// arithmetic, f32 tensors of a given shape.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/linalg/blas.h"

namespace tailor::schemes::detail {

/// A weight shape viewed as a matrix: out = shape[0], in = the product of the
/// rest. Both 0 when the shape has fewer than 2 dimensions.
struct MatrixDims {
  int64_t out = 0;
  int64_t in = 0;
};
MatrixDims matrix_dims(const Shape& shape);

/// True when the shape has rank ≥ 2 and no zero dimension.
bool is_weight_shape(const Shape& shape);

/// W viewed [out, in] as a contiguous f32 tensor. Throws tailor::Error naming
/// `label` when W has rank < 2, an empty dimension, a non-float dtype or a
/// non-finite value.
Tensor weight_matrix(const Tensor& w, std::string_view label);

/// A tensor's f32 data copied into a row-major matrix [rows, cols].
linalg::Matrix to_matrix(const float* data, int64_t rows, int64_t cols);
/// A row-major matrix as a new f32 tensor of `shape` (same element count).
Tensor to_tensor(const linalg::Matrix& m, Shape shape);

/// Factors `n` into `count` factors as equal as possible (largest prime first
/// onto the currently smallest factor), returned in non-increasing order;
/// their product is n. Example: 4096 into 3 → {16, 16, 16}; 96 → {6, 4, 4}.
std::vector<int64_t> balanced_factors(int64_t n, int count);

/// Row-major tensor `src` of shape `dims` with its axes reordered: result axis
/// k is source axis perm[k]. Returns the permuted elements, row-major.
std::vector<float> permute(const float* src, const std::vector<int64_t>& dims,
                           const std::vector<int>& perm);
/// permute, writing the product(dims) elements to `dst` (not overlapping `src`).
void permute_into(const float* src, const std::vector<int64_t>& dims, const std::vector<int>& perm,
                  float* dst);

/// Product of `v[first, last)` (1 when empty).
int64_t product(const std::vector<int64_t>& v, size_t first, size_t last);

}  // namespace tailor::schemes::detail
