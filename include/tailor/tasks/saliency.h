// Saliency / matting masks as a task check: how closely a compressed model's
// single-channel map (N×1×H×W, values in [0, 1] after the model's own
// sigmoid) follows the original's, and the image preprocessing of IS-Net
// (Qin et al., "Highly Accurate Dichotomous Image Segmentation", ECCV 2022)
// as IMG.LY's background-removal packages apply it.
#pragma once

#include <array>
#include <cstdint>

#include "tailor/core/tensor.h"
#include "tailor/tasks/image.h"

namespace tailor::tasks {

/// Agreement of a mask `b` with a reference mask `a` of the same shape.
struct MaskAgreement {
  /// Mean absolute error, mean over every element of |a − b| (mask units,
  /// 0 when both are empty tensors).
  double mae = 0;
  /// Intersection over union of the thresholded masks {a > t} and {b > t}:
  /// |A ∩ B| / |A ∪ B|; 1 when both sets are empty (the masks agree).
  double iou = 1;
  /// Elements above the threshold in a and in b.
  int64_t positives_a = 0, positives_b = 0;
};

/// Compares two masks element by element (any floating dtype, read as f32).
/// `threshold` is the binarisation threshold (a pixel is foreground when its
/// value is strictly greater). Throws Error (source "saliency") when the
/// shapes differ.
MaskAgreement compare_masks(const Tensor& a, const Tensor& b, double threshold = 0.5);

/// IMG.LY's ISNet normalisation (@imgly/background-removal tensorHWCtoBCHW
/// defaults): x = (pixel − 128) / 256 per RGB channel, pixel in 0–255.
inline constexpr std::array<float, 3> kImglyMean{128.f, 128.f, 128.f};
inline constexpr std::array<float, 3> kImglyStd{256.f, 256.f, 256.f};

/// A model input from an 8-bit RGB image: resized to `height` × `width` with
/// resize_bilinear (a plain stretch, aspect ratio not kept, as IMG.LY's
/// `keepAspect = false`), then (pixel − mean[c]) / std[c] per channel, as an
/// f32 tensor [1, 3, height, width] (channel 0 red). Throws Error for a
/// non-positive size or a zero std.
Tensor image_to_nchw(const Image& image, int height, int width,
                     const std::array<float, 3>& mean = kImglyMean,
                     const std::array<float, 3>& std = kImglyStd);

}  // namespace tailor::tasks
