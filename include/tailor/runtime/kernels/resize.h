// Resize (and Upsample) of the two spatial dims of NCHW f32, ONNX semantics
// (opsets 10–19): nearest and linear (bilinear) modes with the coordinate
// transformations the models use. Cubic, antialias, exclude_outside and
// tf_crop_and_resize are refused by the caller (not representable here).
#pragma once

#include <cstdint>

namespace tailor::runtime::kernels {

enum class ResizeMode : uint8_t { nearest, linear };

/// coordinate_transformation_mode: x_original as a function of x_resized,
/// the scale s and the lengths in/out.
enum class CoordinateTransform : uint8_t {
  half_pixel,                 ///< (x + 0.5)/s − 0.5
  pytorch_half_pixel,         ///< out > 1 ? (x + 0.5)/s − 0.5 : 0
  align_corners,              ///< out > 1 ? x·(in − 1)/(out − 1) : 0
  asymmetric,                 ///< x/s
  tf_half_pixel_for_nearest,  ///< (x + 0.5)/s
};

/// nearest_mode: how a fractional x_original picks the input index.
enum class NearestMode : uint8_t { round_prefer_floor, round_prefer_ceil, floor, ceil };

/// x [n, c, in_h, in_w] → y [n, c, out_h, out_w]. scale_h/scale_w are the
/// model's scales (out_h = ⌊in_h·scale_h⌋) or, when the model gives sizes,
/// 0 (then s = out/in). Linear mode clamps x_original to [0, in − 1]
/// (onnxruntime's upsample; equals the ONNX reference's edge handling).
struct ResizeParams {
  int64_t n = 1, c = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  float scale_h = 0.f, scale_w = 0.f;
  ResizeMode mode = ResizeMode::nearest;
  CoordinateTransform transform = CoordinateTransform::half_pixel;
  NearestMode nearest = NearestMode::round_prefer_floor;
};

/// Throws tailor::Error unless all sizes are positive.
void validate(const ResizeParams& p);

/// By the resize kernel of active_kernels() (registry.h). Nearest: y = x at
/// the mode's source index per axis. Linear (f32_resize_avx2): separable
/// interpolation, x first (AVX2 gathers) then y, each source row interpolated
/// once per plane; rounding differs from a four-product sum by ~1 ulp.
/// Throws tailor::Error unless validate passes.
void resize2d(const ResizeParams& p, const float* x, float* y);

}  // namespace tailor::runtime::kernels
