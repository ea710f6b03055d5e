// Conv (1-D and 2-D) and ConvTranspose (2-D), NCHW f32, ONNX semantics
// (onnx/docs/Operators.md, opsets 1–22): groups, dilations, explicit and
// asymmetric pads, strides; bias and activation fused in the epilogue.
#pragma once

#include <cstdint>
#include <vector>

#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime::kernels {

/// Shapes and attributes of a 2-D convolution. x [n, c_in, h, w],
/// w [c_out, c_in/groups, kh, kw], bias [c_out], y [n, c_out, out_h(), out_w()].
/// Pads in input elements (ONNX pads = [top, left, bottom, right]).
struct Conv2dParams {
  int64_t n = 1, c_in = 0, h = 0, w = 0, c_out = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  /// Tuning parameter (the tuner's per-conv decision, node attribute
  /// "column_block"): the number of output columns (of out_h·out_w) one work
  /// item of the implicit GEMM and of the 1×1 sgemm path covers; 0 takes the
  /// kernel's default block (a function of out_h·out_w only). Smaller blocks
  /// keep the input panel in cache and give threads more items. Not used by
  /// the depthwise path nor the reference. Results are equal up to the
  /// summation order.
  int64_t column_block = 0;

  /// ⌊(h + pad_top + pad_bottom − dil_h·(kh − 1) − 1) / stride_h⌋ + 1.
  int64_t out_h() const { return (h + pad_top + pad_bottom - dil_h * (kh - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (w + pad_left + pad_right - dil_w * (kw - 1) - 1) / stride_w + 1; }
};

/// 1-D convolution (ONNX Conv on [n, c, len]): x [n, c_in, len], w [c_out,
/// c_in/groups, k], y [n, c_out, out_len()]. Runs as a 2-D conv with h = 1.
struct Conv1dParams {
  int64_t n = 1, c_in = 0, len = 0, c_out = 0, k = 1;
  int64_t stride = 1, pad_begin = 0, pad_end = 0, dil = 1, groups = 1;

  int64_t out_len() const { return (len + pad_begin + pad_end - dil * (k - 1) - 1) / stride + 1; }
  /// The equivalent 2-D parameters (h = kh = 1).
  Conv2dParams as_2d() const;
};

/// Throws tailor::Error (no source) unless the parameters describe a valid
/// convolution: positive sizes/strides/dilations, non-negative pads,
/// c_in and c_out divisible by groups, a non-empty output.
void validate(const Conv2dParams& p);

/// Floats of caller scratch conv2d needs: 0 for every path (the implicit
/// GEMM keeps a per-thread block of up to 64·c_in/groups·kh·kw floats and the
/// packed weights, c_out rounded up to 6 per group × c_in/groups·kh·kw floats,
/// that the kernel allocates or PackedConvWeights holds). Kept so callers can pass an arena.
int64_t conv2d_scratch_size(const Conv2dParams& p);

/// Conv weights packed once, at load, for the conv GEMM path of
/// active_kernels() (registry.h: conv_pack), or for a 1×1 stride-1 unpadded
/// conv its conv1x1 kernel's (conv1x1_pack), with the weight shape they were
/// packed for. `data` is empty for depthwise convs (w read as it is).
struct PackedConvWeights {
  std::vector<float> data;
  /// Packed by conv1x1_pack for a 1×1 stride-1 unpadded conv (its gemm path
  /// still reads w).
  bool pointwise = false;
  /// f32_conv_winograd_f43_pack's weights too (4× the 3×3 weights), for
  /// 3×3 stride-1 one-group convs (any dilation) with c_in, c_out ≥ 8 and
  /// c_in·c_out ≤ 2²⁰; else empty.
  std::vector<float> winograd;
  int64_t c_out = 0, c_in = 0, kh = 0, kw = 0, groups = 0;
  /// Whether `data` holds p's weights (same c_out, c_in, kh, kw, groups, and
  /// p pointwise exactly when they were packed as such) for the packed or
  /// conv1x1 path, so conv2d can use it for p.
  bool serves(const Conv2dParams& p) const;
};

/// Packs w [c_out, c_in/groups, kh, kw] for the conv GEMM path of p (only
/// p's weight shape, kernel size, strides, dilations and pads matter: the
/// Winograd copy is made only for stride-1 one-group 3×3 convs; n, h, w do not).
/// Throws tailor::Error on invalid weight shapes.
PackedConvWeights pack_conv2d_weights(const Conv2dParams& p, const float* w);

/// Convolution y = act(conv(x, w) + bias) (bias may be null), by the kernels
/// of active_kernels() (registry.h): groups == c_in == c_out runs conv_dw
/// (f32_conv_dw_2x32_avx2); 1×1, stride 1, no pads runs the conv1x1 kernel
/// (on `packed` when it serves p, else on w packed for the call) where
/// conv.cpp's rule says it pays, else the gemm kernel on x directly
/// (f32_gemm_openblas) then bias_act, in fixed blocks of column_block
/// (default ≤ 512) output pixels shared by the OpenMP threads, reading w;
/// everything else conv_gemm (f32_conv_gemm_6x16_avx2, the implicit-im2col
/// GEMM), or conv_packed on `packed` when it serves p (then w is not read
/// and may be null), or conv_winograd (f32_conv_winograd_f43_avx2) when
/// `packed` also holds Winograd weights, p is stride-1 3×3 and the output
/// plane is at least 16×16 (unless the environment sets
/// TAILOR_CONV_WINOGRAD=0), for a dilated p where its tiles (laid on each
/// phase's outputs) keep at least half their outputs. Products under ~1 M multiply-adds
/// run on the calling thread. With TAILOR_KERNELS=ref every path is f32_conv_ref but that last,
/// f32_conv_winograd_f43_ref. `scratch` is
/// unused (see conv2d_scratch_size). Throws tailor::Error on invalid parameters.
void conv2d(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act = {}, float* scratch = nullptr,
            const PackedConvWeights* packed = nullptr);

/// conv2d on the 2-D view of a 1-D convolution.
void conv1d(const Conv1dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act = {}, float* scratch = nullptr);

/// Shapes and attributes of a 2-D transposed convolution (ONNX
/// ConvTranspose). x [n, c_in, h, w], w [c_in, c_out/groups, kh, kw],
/// y [n, c_out, out_h(), out_w()]. When the model gives output_shape instead
/// of pads, the caller derives pads (ONNX: total_padding = stride·(in − 1) +
/// output_padding + ((k − 1)·dil + 1) − output_shape, split per auto_pad).
struct ConvTranspose2dParams {
  int64_t n = 1, c_in = 0, h = 0, w = 0, c_out = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t out_pad_h = 0, out_pad_w = 0;  ///< output_padding
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;

  /// stride·(h − 1) + out_pad + dil·(kh − 1) + 1 − pad_top − pad_bottom.
  int64_t out_h() const {
    return stride_h * (h - 1) + out_pad_h + dil_h * (kh - 1) + 1 - pad_top - pad_bottom;
  }
  int64_t out_w() const {
    return stride_w * (w - 1) + out_pad_w + dil_w * (kw - 1) + 1 - pad_left - pad_right;
  }
};

/// Throws tailor::Error unless the parameters are valid (as for Conv, and
/// output_padding < max(stride, dilation) as ONNX requires).
void validate(const ConvTranspose2dParams& p);

/// Floats of scratch conv_transpose2d needs: (c_out/groups)·kh·kw·h·w.
int64_t conv_transpose2d_scratch_size(const ConvTranspose2dParams& p);

/// y = act(conv_transpose(x, w) + bias) by the registry's gemm kernel (Wᵀ·X
/// into columns), col2im and its bias_act kernel. `scratch`: conv_transpose2d_scratch_size(p)
/// floats or null.
void conv_transpose2d(const ConvTranspose2dParams& p, const float* x, const float* w,
                      const float* bias, float* y, const Activation& act = {},
                      float* scratch = nullptr);

}  // namespace tailor::runtime::kernels
