// Mask agreement (MAE, IoU) and the ISNet image preprocessing (saliency.h).
#include "tailor/tasks/saliency.h"

#include <cmath>

#include "tailor/core/error.h"

namespace tailor::tasks {

MaskAgreement compare_masks(const Tensor& a, const Tensor& b, double threshold) {
  if (a.shape() != b.shape())
    throw Error("saliency", "mask shapes differ: " + shape_to_string(a.shape()) + " vs " +
                                shape_to_string(b.shape()));
  const std::vector<float> x = a.to_f32_vector(), y = b.to_f32_vector();
  MaskAgreement m;
  double abs_sum = 0;
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    abs_sum += std::abs(double(x[i]) - double(y[i]));
    const bool pa = x[i] > threshold, pb = y[i] > threshold;
    m.positives_a += pa;
    m.positives_b += pb;
    inter += pa && pb;
    uni += pa || pb;
  }
  m.mae = x.empty() ? 0.0 : abs_sum / static_cast<double>(x.size());
  m.iou = uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
  return m;
}

Tensor image_to_nchw(const Image& image, int height, int width, const std::array<float, 3>& mean,
                     const std::array<float, 3>& std) {
  for (float s : std) check(s != 0.f, "image preprocessing", "std must not be 0");
  const Image r = resize_bilinear(image, height, width);
  Tensor t = Tensor::zeros(DType::f32, {1, 3, height, width});
  float* p = t.mutable_data<float>();
  const size_t plane = static_cast<size_t>(height) * width;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        p[c * plane + static_cast<size_t>(y) * width + x] =
            (static_cast<float>(r.at(y, x, c)) - mean[c]) / std[c];
  return t;
}

}  // namespace tailor::tasks
