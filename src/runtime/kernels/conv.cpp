// Conv operator: parameter checks and the path choice among the registry's
// kernels (depthwise, 1×1 by the conv1x1 kernel or as blocks of the gemm kernel, 3×3 stride 1 by
// Winograd F(4×4, 3×3) where it pays, dilated ones too, everything else the
// conv GEMM kernel).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/kernels/f32_winograd_f43.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

std::string dims(const Conv2dParams& p) {
  return "x [" + std::to_string(p.n) + ", " + std::to_string(p.c_in) + ", " + std::to_string(p.h) +
         ", " + std::to_string(p.w) + "], kernel " + std::to_string(p.kh) + "×" +
         std::to_string(p.kw) + ", c_out " + std::to_string(p.c_out) + ", groups " +
         std::to_string(p.groups);
}

// groups == c_in == c_out: one filter per channel.
bool is_depthwise(const Conv2dParams& p) {
  return p.groups > 1 && p.groups == p.c_in && p.groups == p.c_out;
}

bool is_pointwise(const Conv2dParams& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
}

// 3×3, stride 1, one group: the shapes Winograd F(4×4, 3×3) serves, dilated
// ones by tiles on each phase's outputs (f32_winograd_f43.h; the transformed
// weights do not depend on the dilation).
bool is_winograd_shape(const Conv2dParams& p) {
  return p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1;
}

bool is_dilated(const Conv2dParams& p) {
  return p.dil_h > 1 || p.dil_w > 1;
}

// Weights whose Winograd copy (4× the 3×3 weights) is kept at load: enough
// channels for the transforms to pay, at most 2²⁰ channel pairs (144 MiB of
// transformed weights). Wide layers pay most (kernels_bench BM_Conv3x3Path,
// Zen 3, 1 thread, CPU time: 256 channels 175–251 GFLOP/s against the
// implicit GEMM's 84–85 from 16×16 on; 512 channels 3–4×).
constexpr int64_t kMaxWinogradPairs = int64_t{1} << 20;

bool winograd_weights_pay(const Conv2dParams& p) {
  return is_winograd_shape(p) && p.c_in >= 8 && p.c_out >= 8 &&
         p.c_in * p.c_out <= kMaxWinogradPairs;
}

// Where the Winograd kernel beats the implicit GEMM: output planes of at
// least the table's winograd_min_plane in each dimension (registry.h: 16
// for the AVX2 products, kernels_bench BM_Conv3x3Path, Zen 3, 1 thread:
// 1.3–2.8× from 16×16 on for 8–128 channels, on 8×8 planes slower from 32
// channels; 8 for the AVX-512 products, Zen 4: 1.8–2.8× at 8×8 for 8–256
// channels, 1.4× at 512).
// On unless TAILOR_CONV_WINOGRAD=0 (the switch to rule it out when chasing a
// numerical difference). F(4×4, 3×3) rounds ~3× more than the direct sum
// (bound in registry.h): on the detector's random-input check, whose output
// sits deep in a sigmoid's tail, passes-on against passes-off moves from
// < 5e-6 to 1.35e-5 of max |y|; against onnxruntime it stays within 1e-4.
// A dilated conv's tiles lie on each phase's outputs (oy mod dil_h, ox mod
// dil_w), so a phase of few outputs leaves most of its tile's 16 unused: it
// pays where the outputs kept, out_h·out_w over 16 per tile, are at least
// kMinTileUse of the tiles' (kernels_bench BM_Conv3x3Dilated).
constexpr double kMinTileUse = 0.5;

bool winograd_pays(const Conv2dParams& p) {
  const char* off = std::getenv("TAILOR_CONV_WINOGRAD");
  if (off != nullptr && std::string(off) == "0") return false;
  const int64_t min_plane = active_kernels().winograd_min_plane;
  if (p.out_h() < min_plane || p.out_w() < min_plane) return false;
  return !is_dilated(p) ||
         static_cast<double>(p.out_h() * p.out_w()) >=
             kMinTileUse * 16.0 * static_cast<double>(detail::winograd_tile_count(p));
}

// Planes where the conv1x1 kernel (x read in place, epilogue on the
// register tile, weights packed at load) beats the gemm path (OpenBLAS
// zeroing y and copying x, then a bias/activation pass): from 16 pixels
// (under, a tile is mostly padding) up to the table's conv1x1_max_pixels
// (registry.cpp: 8192 for the AVX2 kernel, no limit for the AVX-512 one).
// kernels_bench BM_Conv1x1Path, Zen 4, 1 thread, CPU time, hard_swish: the
// AVX2 kernel at 400–6400 pixels 88–93 GFLOP/s against 80–89 (c_in ≥ 96),
// 65–86 against 55–77 (c_in 18–96 at 6400), the recogniser's 120–960 pixels
// level or better; the AVX-512 kernel 2× the AVX2 one on the recogniser's
// shapes (218–239 against 111–120 at 120–960 pixels, c_in ≥ 128).
constexpr int64_t kConv1x1MinPixels = 16;

bool conv1x1_pays(const KernelTable& kt, int64_t pixels) {
  return pixels >= kConv1x1MinPixels && pixels <= kt.conv1x1_max_pixels;
}

}  // namespace

bool conv_winograd_eligible(const Conv2dParams& p) {
  return winograd_weights_pay(p);
}

ConvAlgorithm conv_default_algorithm(const Conv2dParams& p) {
  return winograd_weights_pay(p) && winograd_pays(p) ? ConvAlgorithm::winograd
                                                     : ConvAlgorithm::gemm;
}

Conv2dParams Conv1dParams::as_2d() const {
  Conv2dParams p;
  p.n = n;
  p.c_in = c_in;
  p.h = 1;
  p.w = len;
  p.c_out = c_out;
  p.kh = 1;
  p.kw = k;
  p.stride_w = stride;
  p.pad_left = pad_begin;
  p.pad_right = pad_end;
  p.dil_w = dil;
  p.groups = groups;
  return p;
}

void validate(const Conv2dParams& p) {
  // Messages are built only on failure: validate runs on every conv call.
  if (!(p.n >= 1 && p.c_in >= 1 && p.h >= 1 && p.w >= 1 && p.c_out >= 1 && p.kh >= 1 && p.kw >= 1))
    throw Error("", "Conv sizes must be positive: " + dims(p));
  if (!(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1))
    throw Error("", "Conv strides and dilations must be positive");
  if (!(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0))
    throw Error("", "Conv pads must be non-negative");
  if (!(p.groups >= 1 && p.c_in % p.groups == 0 && p.c_out % p.groups == 0))
    throw Error("", "Conv channels must be divisible by groups: " + dims(p));
  if (!(p.out_h() >= 1 && p.out_w() >= 1))
    throw Error("", "Conv output would be empty (kernel larger than the padded input): " + dims(p));
}

int64_t conv2d_scratch_size(const Conv2dParams& p) {
  return 0;
}

bool PackedConvWeights::serves(const Conv2dParams& p) const {
  return !data.empty() && c_out == p.c_out && c_in == p.c_in && kh == p.kh && kw == p.kw &&
         groups == p.groups && !is_depthwise(p) && pointwise == is_pointwise(p);
}

PackedConvWeights pack_conv2d_weights(const Conv2dParams& p, const float* w) {
  check(p.c_in >= 1 && p.c_out >= 1 && p.kh >= 1 && p.kw >= 1 && p.groups >= 1 &&
            p.c_in % p.groups == 0 && p.c_out % p.groups == 0,
        "", "Conv weights to pack have an invalid shape: " + dims(p));
  PackedConvWeights pw;
  pw.c_out = p.c_out, pw.c_in = p.c_in, pw.kh = p.kh, pw.kw = p.kw, pw.groups = p.groups;
  if (is_depthwise(p)) return pw;
  const KernelTable& kt = active_kernels();
  if (is_pointwise(p)) {  // for the conv1x1 kernel (the gemm path reads w)
    pw.pointwise = true;
    pw.data.resize(static_cast<size_t>(kt.conv1x1_pack(p, w, nullptr)));
    kt.conv1x1_pack(p, w, pw.data.data());
    return pw;
  }
  pw.data.resize(static_cast<size_t>(kt.conv_pack(p, w, nullptr)));
  kt.conv_pack(p, w, pw.data.data());
  if (winograd_weights_pay(p)) {
    pw.winograd.resize(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w, nullptr)));
    f32_conv_winograd_f43_pack(p, w, pw.winograd.data());
  }
  return pw;
}

void conv2d(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* scratch, const PackedConvWeights* packed) {
  conv2d(p, ConvAlgorithm::automatic, x, w, bias, y, act, scratch, packed);
}

void conv2d(const Conv2dParams& p, ConvAlgorithm algorithm, const float* x, const float* w,
            const float* bias, float* y, const Activation& act, float* /*scratch*/,
            const PackedConvWeights* packed) {
  validate(p);
  if (p.column_block < 0) throw Error("", "Conv column_block must be >= 0");
  const KernelTable& kt = active_kernels();
  const bool has_winograd =
      packed != nullptr && packed->serves(p) && !packed->winograd.empty() && is_winograd_shape(p);
  if (!(algorithm != ConvAlgorithm::winograd || has_winograd ||
        (winograd_weights_pay(p) && w != nullptr)))
    throw Error("",
                "Conv conv_algorithm=winograd needs a 3x3 stride-1 one-group conv with c_in, "
                "c_out >= 8 and c_in*c_out <= 2^20: " +
                    dims(p));
  if (is_depthwise(p)) {
    kt.conv_dw(p, x, w, bias, y, act);
    return;
  }
  if (!is_pointwise(p)) {
    // The one selection point: a forced algorithm, else the automatic rule.
    const bool winograd =
        algorithm == ConvAlgorithm::winograd ||
        (algorithm == ConvAlgorithm::automatic && has_winograd && winograd_pays(p));
    if (winograd && has_winograd) {
      kt.conv_winograd(p, x, packed->winograd.data(), bias, y, act);
    } else if (winograd) {
      // Forced on weights not packed at load (not a constant initializer):
      // transformed for this call, as conv_gemm packs its own.
      std::vector<float> u(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w, nullptr)));
      f32_conv_winograd_f43_pack(p, w, u.data());
      kt.conv_winograd(p, x, u.data(), bias, y, act);
    } else if (packed != nullptr && packed->serves(p)) {
      kt.conv_packed(p, x, packed->data.data(), bias, y, act);
    } else {
      kt.conv_gemm(p, x, w, bias, y, act);
    }
    return;
  }
  // 1×1, stride 1, unpadded: y_g = W_g·x_g per image and group, x used as the
  // [cig, h·w] matrix itself.
  const int64_t ohw = p.out_h() * p.out_w();
  if (p.column_block == 0 && conv1x1_pays(kt, ohw)) {  // column_block: the gemm path's tuning
    if (packed != nullptr && packed->serves(p)) {
      kt.conv1x1(p, x, packed->data.data(), bias, y, act);
    } else {  // weights that are not a constant: packed for this call
      std::vector<float> wp(static_cast<size_t>(kt.conv1x1_pack(p, w, nullptr)));
      kt.conv1x1_pack(p, w, wp.data());
      kt.conv1x1(p, x, wp.data(), bias, y, act);
    }
    return;
  }
  // Elsewhere the gemm kernel. Work items (image, group, block of output
  // pixels), a partition fixed by the shape; one serial gemm per item, then
  // the epilogue while the block is in cache.
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t bn =
      p.column_block > 0 ? std::min(p.column_block, ohw) : detail::block_columns(ohw);
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  // Concurrent gemm calls need a serial OpenBLAS (see gemm_partition.h).
  const bool parallel =
      detail::blas_is_serial() && items > 1 && detail::worth_threads(p.n * p.c_out * ohw * cig);
  linalg::parallel_for(items, parallel, [&](int64_t item) {
    const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
    const int64_t b = item / (blocks * p.groups);
    const int64_t j0 = blk * bn, nb = std::min(bn, ohw - j0);
    const float* xg = x + (b * p.c_in + g * cig) * ohw;
    float* yg = y + (b * p.c_out + g * cog) * ohw;
    kt.gemm(false, false, cog, nb, cig, 1.f, w + g * cog * cig, cig, xg + j0, ohw, 0.f, yg + j0,
            ohw);
    for (int64_t o = 0; o < cog; ++o) {
      float* yr = yg + o * ohw + j0;
      kt.bias_act(act, bias ? bias[g * cog + o] : 0.f, yr, yr, nb);
    }
  });
}

void conv1d(const Conv1dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* scratch) {
  conv2d(p.as_2d(), x, w, bias, y, act, scratch);
}

}  // namespace tailor::runtime::kernels
