// PNG loading through libpng's simplified API, and OpenCV-style bilinear resize.
#include "tailor/tasks/image.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tailor/core/error.h"

namespace tailor::tasks {

Image read_png(const std::string& path) {
  check(std::filesystem::is_regular_file(path), path, "no such file");
  {
    // libpng's simplified API says only "Read Error" for a file of another kind.
    png_byte sig[8] = {};
    std::FILE* f = std::fopen(path.c_str(), "rb");
    check(f != nullptr, path, "cannot open");
    const size_t got = std::fread(sig, 1, sizeof sig, f);
    std::fclose(f);
    check(got == sizeof sig && png_sig_cmp(sig, 0, sizeof sig) == 0, path,
          "cannot read PNG: not a PNG file (no PNG signature in the first 8 bytes)");
  }
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) {
    const std::string why = png.message;
    png_image_free(&png);
    throw Error(path, "cannot read PNG: " + why);
  }
  if (static_cast<uint64_t>(png.width) * png.height > (uint64_t{1} << 28)) {
    png_image_free(&png);
    throw Error(path, "PNG of " + std::to_string(png.width) + "x" + std::to_string(png.height) +
                          " pixels is too large (limit 2^28)");
  }
  png.format = PNG_FORMAT_RGB;
  Image img;
  img.height = static_cast<int>(png.height);
  img.width = static_cast<int>(png.width);
  img.pixels.resize(PNG_IMAGE_SIZE(png));
  png_color white{255, 255, 255};
  if (!png_image_finish_read(&png, &white, img.pixels.data(), 0, nullptr)) {
    const std::string why = png.message;
    png_image_free(&png);
    throw Error(path, "cannot read PNG: " + why);
  }
  check(img.height > 0 && img.width > 0, path, "PNG has no pixels");
  return img;
}

namespace {

/// Source index pair and weight of the second for destination index `d`
/// (cv2.resize INTER_LINEAR: half-pixel centres, clamped at the borders).
struct Tap {
  int i0, i1;
  float w1;
};

std::vector<Tap> taps(int src, int dst) {
  std::vector<Tap> t(dst);
  const double scale = static_cast<double>(src) / dst;
  for (int d = 0; d < dst; ++d) {
    double s = (d + 0.5) * scale - 0.5;
    int i0 = static_cast<int>(std::floor(s));
    double f = s - i0;
    if (i0 < 0) {
      i0 = 0;
      f = 0;
    }
    if (i0 >= src - 1) {
      i0 = src - 1;
      f = 0;
    }
    t[d] = {i0, std::min(i0 + 1, src - 1), static_cast<float>(f)};
  }
  return t;
}

}  // namespace

Image resize_bilinear(const Image& src, int height, int width) {
  check(src.height > 0 && src.width > 0, "resize_bilinear", "empty source image");
  check(height > 0 && width > 0, "resize_bilinear",
        "target size " + std::to_string(height) + "x" + std::to_string(width) + " is not positive");
  if (height == src.height && width == src.width) return src;
  const std::vector<Tap> ty = taps(src.height, height), tx = taps(src.width, width);
  Image out;
  out.height = height;
  out.width = width;
  out.pixels.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y) {
    const Tap& a = ty[y];
    for (int x = 0; x < width; ++x) {
      const Tap& b = tx[x];
      for (int c = 0; c < 3; ++c) {
        const float top = src.at(a.i0, b.i0, c) * (1 - b.w1) + src.at(a.i0, b.i1, c) * b.w1;
        const float bot = src.at(a.i1, b.i0, c) * (1 - b.w1) + src.at(a.i1, b.i1, c) * b.w1;
        const float v = top * (1 - a.w1) + bot * a.w1;
        out.pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

}  // namespace tailor::tasks
