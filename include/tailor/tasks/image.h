// 8-bit images for task-level checks: PNG loading (libpng) and the bilinear
// resize OpenCV's cv2.resize applies by default, which model preprocessing
// pipelines such as PaddleOCR's are written against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tailor::tasks {

/// An 8-bit RGB image, row-major, channels interleaved: pixel (y, x) channel c
/// is `pixels[(y·width + x)·3 + c]`, c = 0 red, 1 green, 2 blue.
struct Image {
  int height = 0;
  int width = 0;
  std::vector<uint8_t> pixels;  ///< height·width·3 bytes

  uint8_t at(int y, int x, int c) const {
    return pixels[(static_cast<size_t>(y) * width + x) * 3 + c];
  }
};

/// Reads a PNG file of any colour type and bit depth as 8-bit RGB: grey is
/// replicated to the three channels, palettes expanded, 16-bit samples reduced
/// to 8 bits, alpha composited onto white (as a viewer shows the page).
/// Throws Error naming the file for a missing file, a file that is not a PNG, or
/// corrupt/truncated data (libpng's message), and for images over 2^28 pixels.
Image read_png(const std::string& path);

/// Resizes to `height` × `width` with bilinear interpolation as OpenCV's
/// cv2.resize(INTER_LINEAR) does: source coordinate (d + 0.5)·(src/dst) − 0.5,
/// clamped to the image, no antialiasing when shrinking; each result is
/// rounded to the nearest integer. (OpenCV computes u8 resizes in 11-bit fixed
/// point, so its values may differ from these by one level.) Throws Error for
/// an empty source or a non-positive target size.
Image resize_bilinear(const Image& src, int height, int width);

}  // namespace tailor::tasks
