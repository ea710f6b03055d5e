// ConvTranspose 2-D operator: columns = Wᵀ·X by the registry's gemm kernel (its 1×1 conv kernel
// where KernelTable::matmul_conv1x1), then col2im scatters
// every column entry to its output pixel (Dumoulin & Visin, "A guide to convolution arithmetic for
// deep learning", 2016, §4: the transpose of im2col + GEMM). Where the stride equals the kernel
// (no pads, dilation or output padding) the windows tile the output and col2im is a plain
// interleave of the kw column planes into each output row, written once, no bounds tests.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void validate(const ConvTranspose2dParams& p) {
  check(p.n >= 1 && p.c_in >= 1 && p.h >= 1 && p.w >= 1 && p.c_out >= 1 && p.kh >= 1 && p.kw >= 1,
        "", "ConvTranspose sizes must be positive");
  check(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1, "",
        "ConvTranspose strides and dilations must be positive");
  check(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0, "",
        "ConvTranspose pads must be non-negative");
  check(p.out_pad_h >= 0 && p.out_pad_w >= 0 && p.out_pad_h < std::max(p.stride_h, p.dil_h) &&
            p.out_pad_w < std::max(p.stride_w, p.dil_w),
        "", "ConvTranspose output_padding must be below max(stride, dilation)");
  check(p.groups >= 1 && p.c_in % p.groups == 0 && p.c_out % p.groups == 0, "",
        "ConvTranspose channels (" + std::to_string(p.c_in) + " in, " + std::to_string(p.c_out) +
            " out) must be divisible by groups " + std::to_string(p.groups));
  check(p.out_h() >= 1 && p.out_w() >= 1, "", "ConvTranspose output would be empty");
}

namespace {

// Stride equal to the kernel, no pads, dilation or output padding (the
// detector's 2×2 stride-2 upsampling): the kernel windows tile the output,
// each output pixel the image of exactly one input pixel.
bool tiles_output(const ConvTranspose2dParams& p) {
  return p.stride_h == p.kh && p.stride_w == p.kw && p.dil_h == 1 && p.dil_w == 1 &&
         p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0 &&
         p.out_pad_h == 0 && p.out_pad_w == 0;
}

}  // namespace

int64_t conv_transpose2d_scratch_size(const ConvTranspose2dParams& p) {
  return p.c_out / p.groups * p.kh * p.kw * p.h * p.w;
}

void conv_transpose2d(const ConvTranspose2dParams& p, const float* x, const float* w,
                      const float* bias, float* y, const Activation& act, float* scratch) {
  validate(p);
  const int64_t oh = p.out_h(), ow = p.out_w(), ohw = oh * ow, hw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t rows = cog * p.kh * p.kw;  // rows of the column matrix per group
  const KernelTable& kt = active_kernels();
  const F32GemmFn gemm_fn = kt.gemm;
  std::vector<float> owned;
  if (scratch == nullptr) {
    owned.resize(static_cast<size_t>(conv_transpose2d_scratch_size(p)));
    scratch = owned.data();
  }
  for (int64_t b = 0; b < p.n; ++b) {
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (b * p.c_in + g * cig) * hw;
      const float* wg = w + g * cig * rows;  // [cig, rows]
      if (kt.matmul_conv1x1 && hw >= detail::kConv1x1MatmulMinColumns) {
        // The columns by the AVX-512 1×1 kernel, Wᵀ [rows, cig] as its weights.
        std::vector<float> wt(static_cast<size_t>(rows * cig));
        for (int64_t c = 0; c < cig; ++c)
          for (int64_t r = 0; r < rows; ++r)
            wt[static_cast<size_t>(r * cig + c)] = wg[c * rows + r];
        detail::matmul_by_conv1x1(kt, wt.data(), xg, scratch, rows, cig, hw);
      } else {
        detail::gemm_blocked(gemm_fn, true, false, rows, hw, cig, 1.f, wg, rows, xg, hw, 0.f,
                             scratch, hw);
      }
      float* yg = y + (b * p.c_out + g * cog) * ohw;
      if (tiles_output(p)) {
        // Each output pixel takes one column entry: row iy·kh + ky of channel
        // co interleaves the kw entries (co, ky, ·) of input row iy. Work
        // items (channel, input row), every output written once.
        linalg::parallel_for(
            cog * p.h, detail::worth_threads_elements(cog * ohw), [&](int64_t item) {
              const int64_t co = item / p.h, iy = item % p.h;
              const float bo = bias ? bias[g * cog + co] : 0.f;
              for (int64_t ky = 0; ky < p.kh; ++ky) {
                float* yr = yg + co * ohw + (iy * p.kh + ky) * ow;
                const float* col = scratch + (co * p.kh + ky) * p.kw * hw + iy * p.w;
                if (p.kw == 2) {
                  // The common 2×2 upsampling: one pass over the output row,
                  // which the compiler vectorises as an interleave of the
                  // two column planes (contiguous stores).
                  const float* c1 = col + hw;
                  for (int64_t ix = 0; ix < p.w; ++ix) {
                    yr[2 * ix] = bo + col[ix];
                    yr[2 * ix + 1] = bo + c1[ix];
                  }
                } else {
                  for (int64_t kx = 0; kx < p.kw; ++kx)
                    for (int64_t ix = 0; ix < p.w; ++ix)
                      yr[ix * p.kw + kx] = bo + col[kx * hw + ix];
                }
                kt.bias_act(act, 0.f, yr, yr, ow);
              }
            });
        continue;
      }
      linalg::parallel_for(cog, detail::worth_threads_elements(cog * ohw), [&](int64_t co) {
        float* yc = yg + co * ohw;
        // The bias is added after the sums (in bias_act), as an Add after a
        // bias-free ConvTranspose would: simplify folds such an Add into the
        // bias, bit for bit (onto a bias already there, b + c rounds once more).
        std::fill(yc, yc + ohw, 0.f);
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const float* col = scratch + ((co * p.kh + ky) * p.kw + kx) * hw;
            for (int64_t iy = 0; iy < p.h; ++iy) {
              const int64_t oy = iy * p.stride_h - p.pad_top + ky * p.dil_h;
              if (oy < 0 || oy >= oh) continue;
              for (int64_t ix = 0; ix < p.w; ++ix) {
                const int64_t ox = ix * p.stride_w - p.pad_left + kx * p.dil_w;
                if (ox >= 0 && ox < ow) yc[oy * ow + ox] += col[iy * p.w + ix];
              }
            }
          }
        }
        kt.bias_act(act, bias ? bias[g * cog + co] : 0.f, yc, yc, ohw);
      });
    }
  }
}

}  // namespace tailor::runtime::kernels
