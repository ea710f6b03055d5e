// Saliency mask agreement on hand-built masks (values worked out by hand) and
// the ISNet image preprocessing.
#include "tailor/tasks/saliency.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tailor {
namespace {

Tensor mask(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_f32({1, 1, 1, n}, v);
}

TEST(SaliencyMask, MaeAndIouByHand) {
  // |a − b| = 0.1, 0.2, 0.1, 0.3 → MAE 0.7/4 = 0.175.
  // a > 0.5: {1, 2}; b > 0.5: {2, 3}; ∩ = {2}, ∪ = {1, 2, 3} → IoU 1/3.
  const tasks::MaskAgreement m =
      tasks::compare_masks(mask({0.2f, 0.6f, 0.9f, 0.4f}), mask({0.3f, 0.4f, 0.8f, 0.7f}));
  EXPECT_NEAR(m.mae, 0.175, 1e-7);
  EXPECT_DOUBLE_EQ(m.iou, 1.0 / 3.0);
  EXPECT_EQ(m.positives_a, 2);
  EXPECT_EQ(m.positives_b, 2);
}

TEST(SaliencyMask, ThresholdIsStrictAndEmptyMasksAgree) {
  // 0.5 itself is background: both masks empty → IoU 1; MAE (0 + 0.5)/2.
  const tasks::MaskAgreement e = tasks::compare_masks(mask({0.5f, 0.0f}), mask({0.5f, 0.5f}));
  EXPECT_DOUBLE_EQ(e.iou, 1.0);
  EXPECT_DOUBLE_EQ(e.mae, 0.25);
  // Disjoint foregrounds → IoU 0; identical masks → MAE 0, IoU 1.
  EXPECT_DOUBLE_EQ(tasks::compare_masks(mask({1, 0}), mask({0, 1})).iou, 0.0);
  const tasks::MaskAgreement same = tasks::compare_masks(mask({0.9f, 0.1f}), mask({0.9f, 0.1f}));
  EXPECT_DOUBLE_EQ(same.mae, 0.0);
  EXPECT_DOUBLE_EQ(same.iou, 1.0);
  // Another threshold: a > 0.3 = {0, 1}, b > 0.3 = {1} → IoU 1/2.
  EXPECT_DOUBLE_EQ(tasks::compare_masks(mask({0.4f, 0.9f}), mask({0.2f, 0.8f}), 0.3).iou, 0.5);
}

TEST(SaliencyMask, ShapeMismatchIsAnError) {
  testing::expect_error_naming(
      [] {
        tasks::compare_masks(mask({0, 1}), mask({0, 1, 0}));
      },
      "saliency", "shapes differ");
}

TEST(SaliencyMask, ImageToNchwNormalisesLikeImgly) {
  // 1×2 image, pixels (R,G,B) = (0, 128, 255) and (64, 192, 32); same size →
  // no resampling; (p − 128)/256 per channel, planes R, G, B.
  tasks::Image img{1, 2, {0, 128, 255, 64, 192, 32}};
  const Tensor t = tasks::image_to_nchw(img, 1, 2);
  EXPECT_EQ(t.shape(), (Shape{1, 3, 1, 2}));
  const std::vector<float> v = t.to_f32_vector();
  const std::vector<float> want{-0.5f, -0.25f, 0.0f, 0.25f, 0.49609375f, -0.375f};
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], want[i]) << i;
  // ImageNet-style normalisation: (p/255 − 0.5)/0.5 = (p − 127.5)/127.5.
  const Tensor u =
      tasks::image_to_nchw(img, 1, 2, {127.5f, 127.5f, 127.5f}, {127.5f, 127.5f, 127.5f});
  EXPECT_FLOAT_EQ(u.to_f32_vector()[0], -1.0f);
  EXPECT_FLOAT_EQ(u.to_f32_vector()[4], 1.0f);
  testing::expect_error_naming(
      [&] {
        tasks::image_to_nchw(img, 1, 2, tasks::kImglyMean, {1.f, 0.f, 1.f});
      },
      "image preprocessing", "std");
}

}  // namespace
}  // namespace tailor
