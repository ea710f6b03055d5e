// MaxPool (the registry's kernel), AveragePool and GlobalAveragePool
// operators (NCHW f32; portable loops, no instruction-set-specific version
// yet), onnxruntime's rules for ceil_mode and count_include_pad.
#include "tailor/runtime/kernels/pool.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

int64_t pool_out(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end,
                 int64_t dil, bool ceil_mode) {
  const int64_t num = in + pad_begin + pad_end - dil * (k - 1) - 1;
  if (num < 0) return 0;
  if (!ceil_mode) return num / stride + 1;
  int64_t out = (num + stride - 1) / stride + 1;
  // The last window must start inside the image or the leading padding
  // (onnx/onnx#5741; PyTorch's rule).
  if ((out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace

int64_t Pool2dParams::out_h() const {
  return pool_out(h, kh, stride_h, pad_top, pad_bottom, dil_h, ceil_mode);
}
int64_t Pool2dParams::out_w() const {
  return pool_out(w, kw, stride_w, pad_left, pad_right, dil_w, ceil_mode);
}

void validate(const Pool2dParams& p) {
  check(p.n >= 1 && p.c >= 1 && p.h >= 1 && p.w >= 1 && p.kh >= 1 && p.kw >= 1, "",
        "pool sizes and kernel must be positive");
  check(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1, "",
        "pool strides and dilations must be positive");
  check(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0, "",
        "pool pads must be non-negative");
  check(p.pad_top < p.kh && p.pad_bottom < p.kh && p.pad_left < p.kw && p.pad_right < p.kw, "",
        "pool pads must be smaller than the kernel");
  check(p.out_h() >= 1 && p.out_w() >= 1, "",
        "pool output would be empty: input " + std::to_string(p.h) + "×" + std::to_string(p.w) +
            ", kernel " + std::to_string(p.kh) + "×" + std::to_string(p.kw));
}

void max_pool2d(const Pool2dParams& p, const float* x, float* y) {
  validate(p);
  active_kernels().max_pool(p, x, y);
}

void average_pool2d(const Pool2dParams& p, const float* x, float* y) {
  validate(p);
  check(p.dil_h == 1 && p.dil_w == 1, "", "AveragePool with dilations is not supported");
  const int64_t oh = p.out_h(), ow = p.out_w(), planes = p.n * p.c;
  // Per output column: the window's in-image columns [xs, xe) and its count
  // along x (the same for every row and plane).
  std::vector<int64_t> xs(static_cast<size_t>(ow)), xe(xs.size()), wc(xs.size());
  for (int64_t ox = 0; ox < ow; ++ox) {
    const int64_t x0 = ox * p.stride_w - p.pad_left;
    const int64_t x1 = std::min(x0 + p.kw, p.w + p.pad_right);
    const size_t o = static_cast<size_t>(ox);
    xs[o] = std::max<int64_t>(x0, 0), xe[o] = std::min(x1, p.w);
    wc[o] = p.count_include_pad ? x1 - x0 : xe[o] - xs[o];
  }
  // Threads by the runtime's rule (gemm_partition.h: worth_threads).
  linalg::parallel_for(planes, detail::worth_threads(planes * oh * ow * p.kh * p.kw),
                       [&](int64_t pl) {
                         // The window rows summed per input column (rows in ascending order, one
                         // vectorisable pass per row), then each window's columns in ascending
                         // order.
                         thread_local std::vector<float> col;
                         col.resize(static_cast<size_t>(p.w));
                         const float* xp = x + pl * p.h * p.w;
                         float* yp = y + pl * oh * ow;
                         for (int64_t oy = 0; oy < oh; ++oy) {
                           const int64_t y0 = oy * p.stride_h - p.pad_top;
                           const int64_t y1 = std::min(y0 + p.kh, p.h + p.pad_bottom);
                           const int64_t ys = std::max<int64_t>(y0, 0), ye = std::min(y1, p.h);
                           const int64_t hc = p.count_include_pad ? y1 - y0 : ye - ys;
                           std::fill(col.begin(), col.end(), 0.f);
                           for (int64_t iy = ys; iy < ye; ++iy) {
                             const float* row = xp + iy * p.w;
                             for (int64_t ix = 0; ix < p.w; ++ix)
                               col[static_cast<size_t>(ix)] += row[ix];
                           }
                           for (int64_t ox = 0; ox < ow; ++ox) {
                             const size_t o = static_cast<size_t>(ox);
                             float sum = 0.f;
                             for (int64_t ix = xs[o]; ix < xe[o]; ++ix)
                               sum += col[static_cast<size_t>(ix)];
                             const int64_t count = hc * wc[o];
                             yp[oy * ow + ox] = count > 0 ? sum / static_cast<float>(count) : 0.f;
                           }
                         }
                       });
}

void global_average_pool(int64_t planes, int64_t spatial, const float* x, float* y) {
  if (planes < 0 || spatial < 1)
    throw Error("", "GlobalAveragePool needs a non-empty spatial extent");
  const auto plane = [&](int64_t pl) {
    const float* xp = x + pl * spatial;
    // Eight interleaved partial sums (fixed order), then combined: vectorisable.
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= spatial; i += 8) {
      for (int j = 0; j < 8; ++j) part[j] += xp[i + j];
    }
    float sum =
        ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; i < spatial; ++i) sum += xp[i];
    y[pl] = sum / static_cast<float>(spatial);
  };
  linalg::parallel_for(planes, detail::worth_threads_elements(planes * spatial), plane);
}

}  // namespace tailor::runtime::kernels
