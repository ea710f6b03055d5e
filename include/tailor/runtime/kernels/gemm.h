// MatMul (numpy broadcasting of batch dims) and Gemm, ONNX semantics, on
// the gemm kernel of active_kernels() (registry.h: OpenBLAS or the reference).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime::kernels {

/// Output shape of ONNX MatMul (numpy.matmul): a 1-D first operand is
/// promoted to [1, K] and a 1-D second to [K, 1], the batch dims broadcast,
/// the promoted dims removed again. Throws tailor::Error on a rank-0 operand,
/// mismatched K or non-broadcastable batch dims.
std::vector<int64_t> matmul_output_shape(std::span<const int64_t> a_shape,
                                         std::span<const int64_t> b_shape);

/// y = a @ b (numpy.matmul) on contiguous row-major tensors; y has
/// matmul_output_shape(a_shape, b_shape). A 2-D (or 1-D) b with a batched a
/// runs as one sgemm over all rows of a.
void matmul(const float* a, std::span<const int64_t> a_shape, const float* b,
            std::span<const int64_t> b_shape, float* y);

/// ONNX Gemm: Y[m, n] = alpha·op(A)·op(B) + beta·C, op(A) [m, k] (A stored
/// [k, m] when trans_a), op(B) [k, n] (B stored [n, k] when trans_b).
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
};

/// Gemm with C (may be null: no C) of shape c_shape, unidirectionally
/// broadcast to [m, n]: rank 0, [n], [1, n], [m, 1], [m, n] (or [1, 1], [1]).
/// Then `act`. Throws tailor::Error on a C shape that does not broadcast.
void gemm(const GemmParams& p, const float* a, const float* b, const float* c,
          std::span<const int64_t> c_shape, float* y, const Activation& act = {});

}  // namespace tailor::runtime::kernels
