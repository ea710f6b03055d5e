// Scalar reference of scaled dot-product attention per head (Vaswani et al.,
// 2017, "Attention Is All You Need", eq. 1): scores q·k·scale + mask, the
// softmax over the keys by std::exp with float sums, then the weighted sum of
// the values, each in key order. A row masked everywhere (max −inf) gives
// zeros; a NaN score makes its row NaN (the max is NaN, so is every weight).
#include <algorithm>
#include <cmath>
#include <vector>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_attention_ref(const float* q, const float* k, const float* v, const float* mask, float* y,
                       int64_t heads, int64_t rows, int64_t keys, int64_t d, int64_t kv_head_stride,
                       int64_t key_stride, float scale) {
  std::vector<float> scores(static_cast<size_t>(keys));
  for (int64_t h = 0; h < heads; ++h) {
    const float* kh = k + h * kv_head_stride;
    const float* vh = v + h * kv_head_stride;
    for (int64_t i = 0; i < rows; ++i) {
      const float* qi = q + (h * rows + i) * d;
      float best = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        float dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += qi[c] * kh[j * key_stride + c];
        const float s = dot * scale + (mask ? mask[i * keys + j] : 0.0f);
        scores[static_cast<size_t>(j)] = s;
        if (s > best || std::isnan(s)) best = s;  // a NaN score makes the row NaN
      }
      float sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        const float e = best == -INFINITY ? 0.0f : std::exp(scores[static_cast<size_t>(j)] - best);
        scores[static_cast<size_t>(j)] = e;
        sum += e;
      }
      float* yi = y + (h * rows + i) * d;
      std::fill(yi, yi + d, 0.0f);
      const float inv = sum > 0 ? 1.0f / sum : 0.0f;
      for (int64_t j = 0; j < keys; ++j) {
        const float a = scores[static_cast<size_t>(j)] * inv;
        for (int64_t c = 0; c < d; ++c) yi[c] += a * vh[j * key_stride + c];
      }
    }
  }
}

}  // namespace tailor::runtime::kernels
