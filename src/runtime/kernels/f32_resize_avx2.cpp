// f32_resize_avx2: Resize of NCHW f32 over H and W: nearest and bilinear,
// ONNX coordinate transformations, coordinates computed in f32 as
// onnxruntime's upsample does so that nearest-mode ties fall the same way.
// Nearest copies through per-axis index tables (a repeated source row is one
// row copy); bilinear runs separably (x by AVX2 gathers, then y), which rounds
// differently from onnxruntime's four-product sum by ~1 ulp.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

float original_coordinate(CoordinateTransform t, int64_t x, float scale, int64_t in, int64_t out) {
  const float xr = static_cast<float>(x);
  switch (t) {
    case CoordinateTransform::half_pixel:
      return (xr + 0.5f) / scale - 0.5f;
    case CoordinateTransform::pytorch_half_pixel:
      return out > 1 ? (xr + 0.5f) / scale - 0.5f : 0.f;
    case CoordinateTransform::align_corners:
      return out == 1 ? 0.f : xr * static_cast<float>(in - 1) / static_cast<float>(out - 1);
    case CoordinateTransform::asymmetric:
      return xr / scale;
    case CoordinateTransform::tf_half_pixel_for_nearest:
      return (xr + 0.5f) / scale;
  }
  throw Error("", "unknown coordinate transformation");
}

int64_t nearest_index(NearestMode m, float x, int64_t in) {
  int64_t i = 0;
  switch (m) {
    case NearestMode::round_prefer_floor:
      i = x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::floor(x))
                                    : static_cast<int64_t>(std::round(x));
      break;
    case NearestMode::round_prefer_ceil:
      i = x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::ceil(x))
                                    : static_cast<int64_t>(std::round(x));
      break;
    case NearestMode::floor:
      i = static_cast<int64_t>(std::floor(x));
      break;
    case NearestMode::ceil:
      i = static_cast<int64_t>(std::ceil(x));
      break;
  }
  return std::clamp<int64_t>(i, 0, in - 1);
}

float axis_scale(float given, int64_t in, int64_t out) {
  return given > 0.f ? given : static_cast<float>(out) / static_cast<float>(in);
}

// Linear interpolation table of one axis: lower/upper index and their weights.
struct LinearTap {
  int64_t i0, i1;
  float w0, w1;  // weight of i0 and of i1
};

std::vector<LinearTap> linear_taps(const ResizeParams& p, int64_t in, int64_t out, float scale) {
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    float x = original_coordinate(p.transform, o, scale, in, out);
    x = std::max(0.f, std::min(x, static_cast<float>(in - 1)));
    const int64_t i0 = std::min(static_cast<int64_t>(x), in - 1);
    const int64_t i1 = std::min(i0 + 1, in - 1);
    float d0 = std::fabs(x - static_cast<float>(i0)), d1 = std::fabs(x - static_cast<float>(i1));
    if (i0 == i1) d0 = d1 = 0.5f;
    taps[o] = {i0, i1, d1, d0};  // the nearer index gets the larger weight
  }
  return taps;
}

}  // namespace

void f32_resize_avx2(const ResizeParams& p, const float* x, float* y) {
  const float sh = axis_scale(p.scale_h, p.in_h, p.out_h);
  const float sw = axis_scale(p.scale_w, p.in_w, p.out_w);
  const int64_t planes = p.n * p.c, in_hw = p.in_h * p.in_w, out_hw = p.out_h * p.out_w;
  if (p.mode == ResizeMode::nearest) {
    std::vector<int64_t> iy(static_cast<size_t>(p.out_h)), ix(static_cast<size_t>(p.out_w));
    for (int64_t o = 0; o < p.out_h; ++o) {
      iy[o] = nearest_index(p.nearest, original_coordinate(p.transform, o, sh, p.in_h, p.out_h),
                            p.in_h);
    }
    for (int64_t o = 0; o < p.out_w; ++o) {
      ix[o] = nearest_index(p.nearest, original_coordinate(p.transform, o, sw, p.in_w, p.out_w),
                            p.in_w);
    }
    linalg::parallel_for(planes, detail::worth_threads_elements(planes * out_hw), [&](int64_t pl) {
      const float* xp = x + pl * in_hw;
      float* yp = y + pl * out_hw;
      for (int64_t oy = 0; oy < p.out_h; ++oy) {
        float* yr = yp + oy * p.out_w;
        if (oy > 0 && iy[oy] == iy[oy - 1]) {
          // Upsampling repeats source rows: copy the row just written.
          std::copy(yr - p.out_w, yr, yr);
          continue;
        }
        const float* xr = xp + iy[oy] * p.in_w;
        for (int64_t ox = 0; ox < p.out_w; ++ox) yr[ox] = xr[ix[ox]];
      }
    });
    return;
  }
  // Separable: each source row needed is interpolated along x once (AVX2
  // gathers) into a row buffer, then pairs of buffers are blended along y.
  // Output rows of an upsampling reuse the buffers of the rows before them.
  const std::vector<LinearTap> ty = linear_taps(p, p.in_h, p.out_h, sh);
  const std::vector<LinearTap> tx = linear_taps(p, p.in_w, p.out_w, sw);
  const int64_t ow = p.out_w;
  std::vector<int32_t> i0(static_cast<size_t>(ow)), i1(i0.size());
  std::vector<float> w0(i0.size()), w1(i0.size());
  for (int64_t o = 0; o < ow; ++o) {
    i0[o] = static_cast<int32_t>(tx[o].i0);
    i1[o] = static_cast<int32_t>(tx[o].i1);
    w0[o] = tx[o].w0;
    w1[o] = tx[o].w1;
  }
  auto interpolate_row = [&](const float* row, float* out) {
    int64_t o = 0;
    for (; o + 8 <= ow; o += 8) {
      const __m256 v0 = _mm256_i32gather_ps(row, _mm256_loadu_si256((const __m256i*)(&i0[o])), 4);
      const __m256 v1 = _mm256_i32gather_ps(row, _mm256_loadu_si256((const __m256i*)(&i1[o])), 4);
      _mm256_storeu_ps(out + o, _mm256_fmadd_ps(_mm256_loadu_ps(&w0[o]), v0,
                                                _mm256_mul_ps(_mm256_loadu_ps(&w1[o]), v1)));
    }
    for (; o < ow; ++o) out[o] = std::fma(w0[o], row[i0[o]], w1[o] * row[i1[o]]);
  };
  linalg::parallel_for(planes, detail::worth_threads_elements(planes * out_hw, 2), [&](int64_t pl) {
    thread_local std::vector<float> buf_a, buf_b;  // written before read
    buf_a.resize(static_cast<size_t>(ow));
    buf_b.resize(static_cast<size_t>(ow));
    const float* xp = x + pl * in_hw;
    float* yp = y + pl * out_hw;
    float* h0 = buf_a.data();
    float* h1 = buf_b.data();
    int64_t row0 = -1, row1 = -1;  // source rows held in h0, h1
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const LinearTap& a = ty[oy];
      if (row0 != a.i0) {
        if (row1 == a.i0) {
          std::swap(h0, h1);
          std::swap(row0, row1);
        } else {
          interpolate_row(xp + a.i0 * p.in_w, h0);
          row0 = a.i0;
        }
      }
      if (row1 != a.i1) {
        if (a.i1 == row0) {
          std::copy(h0, h0 + ow, h1);
        } else {
          interpolate_row(xp + a.i1 * p.in_w, h1);
        }
        row1 = a.i1;
      }
      float* yr = yp + oy * ow;
      const __m256 wa = _mm256_set1_ps(a.w0), wb = _mm256_set1_ps(a.w1);
      int64_t o = 0;
      for (; o + 8 <= ow; o += 8) {
        _mm256_storeu_ps(yr + o, _mm256_fmadd_ps(wa, _mm256_loadu_ps(h0 + o),
                                                 _mm256_mul_ps(wb, _mm256_loadu_ps(h1 + o))));
      }
      for (; o < ow; ++o) yr[o] = std::fma(a.w0, h0[o], a.w1 * h1[o]);
    }
  });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
