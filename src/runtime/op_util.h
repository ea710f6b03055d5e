// Helpers shared by the op kernels: broadcasting, axes, reading shape inputs.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {

/// Element pointer of an f32 tensor `t`; fails the op (ctx.fail, naming `what`
/// and the dtype found) for any other dtype.
inline const float* f32_ptr(const OpContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::f32)
    ctx.fail(std::string(what) + " must be f32, got " + std::string(dtype_name(t.dtype())));
  return t.data<float>();
}

/// Input `i` itself when contiguous and aligned (no Tensor copy, so nothing
/// allocated), else a contiguous copy of it stored in `hold`.
inline const Tensor& dense_input(const OpContext& ctx, size_t i, Tensor& hold) {
  const Tensor& x = ctx.in(i);
  if (x.is_contiguous() && x.is_aligned()) return x;
  hold = x.contiguous();
  return hold;
}

/// Registration hooks, one per ops_*.cpp file.
void register_elementwise_ops();
void register_shape_ops();
void register_reduce_ops();
void register_control_ops();
void register_nn_ops();
void register_compressed_ops();
void register_fused_ops();    // ops_fused.cpp (ai.tailor fused ops)
void register_layout_ops();   // ops_layout.cpp (ai.tailor NHWC ops)
void register_decoder_ops();  // ops_decoder.cpp (ai.tailor Attention, RMSNormalization)

/// Multidirectional (NumPy) broadcast of shapes (onnx/docs/Broadcasting.md);
/// throws Error naming the node when dims differ and neither is 1.
Shape broadcast_shapes(const OpContext& ctx, const Shape& a, const Shape& b);

/// Axis in [-rank, rank) normalised to [0, rank); throws Error naming the node otherwise.
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);

/// max(a, b) and min(a, b) as onnxruntime's Max, Min, Relu and Clip compute
/// them: a NaN in either operand gives NaN (`a > b ? a : b` would drop a NaN
/// in a, std::max one in b). Integers compare as usual.
template <class T>
inline T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a)) return a;
  return a > b ? a : b;  // b when b is NaN
}
template <class T>
inline T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a)) return a;
  return a < b ? a : b;  // b when b is NaN
}

/// Integer values of a 1-D (or scalar) i64/i32 tensor (shape inputs, axes).
std::vector<int64_t> int_values(const OpContext& ctx, const Tensor& t, const char* what);

/// Iterates `out` (contiguous, of the broadcast shape) against N inputs
/// broadcast to it. Dimensions are coalesced where every operand allows, then
/// `inner(out_offset, in_offsets, in_strides, length)` is called for each run
/// along the last coalesced dimension (in_strides are 0 or 1). Parallel over
/// runs (linalg::parallel_for) when the tensor is large.
template <size_t N, class F>
void broadcast_runs(const std::array<const Tensor*, N>& ins, const Shape& out_shape, F&& inner);

/// Calls fn(T{}) with T the C++ type of `dt` among float, double, int32_t,
/// int64_t, uint8_t (bool), int8_t, uint16_t (f16 bits not arithmetic: refused).
template <class F>
void dispatch_numeric(const OpContext& ctx, DType dt, F&& fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
    case DType::i32:
      return fn(int32_t{});
    case DType::i64:
      return fn(int64_t{});
    case DType::i8:
      return fn(int8_t{});
    case DType::u8:
      return fn(uint8_t{});
    default:
      ctx.fail("dtype " + std::string(dtype_name(dt)) + " is unsupported by this op");
  }
}

// ---- implementation ----

template <size_t N, class F>
void broadcast_runs(const std::array<const Tensor*, N>& ins, const Shape& out_shape, F&& inner) {
  const size_t rank = out_shape.size();
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  // Per-operand element strides in the output's rank (0 on broadcast dims).
  std::vector<int64_t> dims(out_shape.begin(), out_shape.end());
  std::array<std::vector<int64_t>, N> st;
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = ins[k]->shape();
    st[k].assign(rank, 0);
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const size_t off = rank - d;  // from the right
      if (off <= s.size()) {
        const int64_t sd = s[s.size() - off];
        st[k][d] = sd == 1 ? 0 : stride;
        stride *= sd;
      }
    }
  }
  // Drop size-1 dims, then merge neighbours whose strides chain for every operand.
  std::vector<int64_t> cd;
  std::array<std::vector<int64_t>, N> cs;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    bool merge = !cd.empty();
    for (size_t k = 0; merge && k < N; ++k) merge = cs[k].back() == st[k][d] * dims[d];
    if (merge) {
      cd.back() *= dims[d];
      for (size_t k = 0; k < N; ++k) cs[k].back() = st[k][d];
    } else {
      cd.push_back(dims[d]);
      for (size_t k = 0; k < N; ++k) cs[k].push_back(st[k][d]);
    }
  }
  if (cd.empty()) {
    cd.push_back(1);
    for (size_t k = 0; k < N; ++k) cs[k].push_back(0);
  }
  const size_t r = cd.size();
  const int64_t len = cd[r - 1];
  const int64_t runs = total / len;
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = cs[k][r - 1];
  auto offsets = [&](int64_t run, std::array<int64_t, N>& off) {
    off.fill(0);
    int64_t rem = run;
    for (size_t d = r - 1; d-- > 0;) {
      const int64_t i = rem % cd[d];
      rem /= cd[d];
      for (size_t k = 0; k < N; ++k) off[k] += i * cs[k][d];
    }
  };
  const bool threads = kernels::detail::worth_threads_elements(total);
  if (threads && runs == 1) {
    // One run (same shapes, or one operand a scalar): split it for the threads.
    constexpr int64_t kPiece = 1 << 14;
    const int64_t pieces = (len + kPiece - 1) / kPiece;
    linalg::parallel_for(pieces, true, [&](int64_t p) {
      std::array<int64_t, N> off;
      offsets(0, off);
      const int64_t begin = p * kPiece;
      for (size_t k = 0; k < N; ++k) off[k] += begin * inner_stride[k];
      inner(begin, off, inner_stride, std::min(kPiece, len - begin));
    });
  } else if (threads && runs > 1) {
    linalg::parallel_for(runs, true, [&](int64_t run) {
      std::array<int64_t, N> off;
      offsets(run, off);
      inner(run * len, off, inner_stride, len);
    });
  } else {
    for (int64_t run = 0; run < runs; ++run) {
      std::array<int64_t, N> off;
      offsets(run, off);
      inner(run * len, off, inner_stride, len);
    }
  }
}

}  // namespace tailor::runtime
