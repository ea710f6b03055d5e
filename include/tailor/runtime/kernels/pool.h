// MaxPool, AveragePool and GlobalAveragePool, 2-D NCHW f32, ONNX semantics
// as onnxruntime implements them (pool_attributes.h, pool_functors.h).
#pragma once

#include <cstdint>

namespace tailor::runtime::kernels {

/// x [n, c, h, w] → y [n, c, out_h(), out_w()]. Pads in input elements.
/// Output size: (h + pads − dil·(kh − 1) − 1) / stride + 1, rounded down, or
/// up when ceil_mode; with ceil_mode a last window that would start in the
/// bottom/right padding is dropped (as PyTorch and onnxruntime do).
struct Pool2dParams {
  int64_t n = 1, c = 0, h = 0, w = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dil_h = 1, dil_w = 1;  ///< MaxPool only; AveragePool requires 1
  bool ceil_mode = false;
  bool count_include_pad = false;  ///< AveragePool only

  int64_t out_h() const;
  int64_t out_w() const;
};

/// Throws tailor::Error unless the parameters are valid (positive kernel,
/// strides, dilations; pads ≥ 0 and smaller than the kernel; output not empty).
void validate(const Pool2dParams& p);

/// MaxPool: max over the window's in-image elements (padding never wins), by
/// the max_pool kernel of active_kernels(). f32_maxpool_avx2 runs 2×2
/// stride-2 unpadded windows vectorised (vmaxps), where a NaN in a window may
/// be dropped rather than propagated (as onnxruntime); elsewhere, and in
/// f32_maxpool_ref, a NaN in the window gives NaN.
void max_pool2d(const Pool2dParams& p, const float* x, float* y);

/// AveragePool: mean over the window. count_include_pad = false divides by the
/// number of in-image elements; true by the window clipped to the padded
/// extent [−pad_begin, size + pad_end) (onnxruntime's rule). Throws
/// tailor::Error when a dilation is not 1.
void average_pool2d(const Pool2dParams& p, const float* x, float* y);

/// GlobalAveragePool: y[i] = mean of x[i·spatial, (i+1)·spatial) for
/// i < planes (planes = n·c, spatial = Π spatial dims).
void global_average_pool(int64_t planes, int64_t spatial, const float* x, float* y);

}  // namespace tailor::runtime::kernels
