// The runtime's micro-kernels and the one place that picks them for the CPU
// (XNNPACK's habit, as src/schemes/kernels does for the compressed GEMMs).
// Names say datatype, operation, tile and instruction set:
// f32_conv_gemm_6x16_avx2 is the f32 convolution as an implicit GEMM with
// 6×16 register tiles on AVX2/FMA; `_ref` is the scalar reference of an
// operation, straightforward loops after the ONNX operator definition that
// share no code with the optimised kernels (tests/runtime/kernels compares
// them). The operator functions of conv.h, gemm.h, pool.h, resize.h,
// elementwise.h and lstm.h validate their parameters and call the kernels of
// active_kernels(); kernels take validated parameters and throw nothing.
#pragma once

#include <cstdint>
#include <string>

#include "tailor/core/cpu.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/elementwise.h"
#include "tailor/runtime/kernels/pool.h"
#include "tailor/runtime/kernels/resize.h"
#include "tailor/schemes/kernels.h"

namespace tailor::runtime::kernels {

using tailor::Isa;

/// C = alpha·op(A)·op(B) + beta·C, row-major, cblas_sgemm's contract: op(A)
/// [m, k] (A stored [k, m] with leading dimension lda when trans_a, else
/// [m, k]), op(B) [k, n] (B stored [n, k] when trans_b), C [m, n] with
/// leading dimension ldc; beta = 0 ignores C's input (NaN included). One
/// call on the calling thread.
using F32GemmFn = void (*)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc);
/// y[j] = alpha·Σ_l x[l]·op(B)[l, j] + beta·y[j] for j < n: F32GemmFn with
/// m = 1 and A not transposed (x [k], y [n]), op(B) [k, n] (B stored [n, k]
/// when trans_b) with leading dimension ldb; beta = 0 ignores y's input (NaN
/// included). y[j] depends on x, column j of op(B), alpha, beta and y[j]
/// alone, by operations that do not depend on n or j: a call on columns
/// [j0, j1) (b offset to them) gives those columns' values of the whole
/// call, so splitting the columns over threads leaves the results as they
/// are. One call on the calling thread.
using F32GemvFn = void (*)(bool trans_b, int64_t n, int64_t k, float alpha, const float* x,
                           const float* b, int64_t ldb, float beta, float* y);
/// y = act(conv(x, w) + bias), the whole convolution (shapes in Conv2dParams;
/// bias [c_out] or null); parameters already validated.
using F32ConvFn = void (*)(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                           float* y, const Activation& act);
/// Packs conv weights w [c_out, c_in/groups, kh, kw] into the layout the same
/// table's F32ConvPackedFn reads and returns its size in floats; with
/// `packed` null only returns the size. Depends on the weight shape only
/// (c_out, c_in, groups, kh, kw of p), so it runs once, at load.
using F32ConvPackFn = int64_t (*)(const Conv2dParams& p, const float* w, float* packed);
/// As F32ConvFn, with the weights packed by the same table's F32ConvPackFn.
using F32ConvPackedFn = void (*)(const Conv2dParams& p, const float* x, const float* packed,
                                 const float* bias, float* y, const Activation& act);
/// A groups-1 Conv whose weight Ŵ [c_out, K = c_in·kh·kw] (DESIGN.md's conv
/// orientation, k = (ci·kh + ky)·kw + kx) is held as packed codes
/// (schemes::kernels::PackedGemmArgs's layout: w.out = c_out, w.in = K, w.group
/// inputs per f16 scale; w's x, batch and y unused).
struct QbConvParams {
  schemes::kernels::PackedGemmArgs w;
  int bits = 8;       ///< bits per code: 8, 4, 3 or 2
  Conv2dParams conv;  ///< shapes, strides, pads, dilations; groups 1
};
/// y = act(conv(x, Ŵ) + bias) (NCHW, contiguous; bias [c_out] or null);
/// parameters already validated (the CompressedConv op does). The weight
/// stays packed: the optimised kernel decodes a panel of rows at a time.
using QbConvFn = void (*)(const QbConvParams& p, const float* x, const float* bias, float* y,
                          const Activation& act);
/// W8A8 1×1 convolution (stride 1, unpadded, groups 1): the scheme int8-a8's
/// arithmetic (schemes::kernels::q8_q8_gemm_ref's definition, each pixel a
/// row of X). For image b and pixel p, the column x[b, :, p] (c_in values,
/// stride `pixels`) is quantized: s[p] = max_k |x[k, p]|/127 (f32),
/// qx[k, p] = clamp(round_half_away(x[k, p]/s[p]), −127, 127) (0 when s[p] =
/// 0). Then y[b, o, p] = act(f32(Σ_k qx[k, p]·q[o, k])·(s[p]·f16(scale[o])) +
/// bias[o]): the integer sum exact, the two products in f32 in this order,
/// then the bias and act as F32BiasActFn. A column holding NaN or ±Inf gives
/// NaN in every output of its pixel. Needs c_in ≤ kQ8Q8Conv1x1MaxIn (int32 sums).
struct Q8Q8Conv1x1Params {
  int64_t n = 0;                    ///< images
  int64_t c_in = 0;                 ///< input channels: the reduction (elements)
  int64_t c_out = 0;                ///< output channels
  int64_t pixels = 0;               ///< H·W of input and output
  const uint8_t* packed = nullptr;  ///< the same table's Q8Q8Conv1x1PackFn output
};
/// Largest c_in of a W8A8 1×1 conv: |Σ| ≤ c_in·255·128 < 2^31 (the shifted
/// codes of the VNNI kernel).
constexpr int64_t kQ8Q8Conv1x1MaxIn = 65535;
/// Packs int8 codes w (per-channel f16 scales: w.group ≥ w.in; w.out = c_out,
/// w.in = c_in) into the layout the same table's Q8Q8Conv1x1Fn reads; returns
/// its size in bytes and writes it when `packed` is not null. Runs once, at load.
using Q8Q8Conv1x1PackFn = int64_t (*)(const schemes::kernels::PackedGemmArgs& w, uint8_t* packed);
/// y [n, c_out, pixels] from x [n, c_in, pixels] (NCHW, contiguous); bias [c_out] or null.
using Q8Q8Conv1x1Fn = void (*)(const Q8Q8Conv1x1Params& p, const float* x, const float* bias,
                               float* y, const Activation& act);
/// W8A8 k×k convolution (groups 1; any kernel, strides, pads, dilations): the
/// scheme int8-a8 on a Conv other than 1×1 stride 1 unpadded (those are
/// Q8Q8Conv1x1Params'), with ONE activation scale per image:
/// s[b] = max_{c, iy, ix} |x[b, c, iy, ix]|/127 (f32),
/// qx = clamp(round_half_away(x/s[b]), −127, 127) (0 when s[b] = 0), a
/// padding pixel qx = 0. Then y[b, o, oy, ox] = act(f32(Σ_{c, ky, kx} qx[b, c, iy,
/// ix]·q[o, c, ky, kx])·(s[b]·f16(scale[o])) + bias[o]) with iy = oy·stride_h
/// − pad_top + ky·dil_h, ix likewise: one exact integer sum over every tap
/// and channel, converted to f32 once, the two products in f32 in this order
/// (s[b]·scale[o] first), then the bias and act as F32BiasActFn. So the file
/// computes the same bits with a standard Conv on the integer codes (its
/// partial sums exact in f32, channel chunks). A NaN or ±Inf anywhere in
/// image b makes s[b] NaN and every output of image b NaN. (Per-pixel scales,
/// as Q8Q8Conv1x1's, cannot be written so: each tap would need its own.)
/// x [n, c_in, h, w], y [n, c_out, out_h, out_w], NCHW contiguous; bias [c_out] or null.
struct Q8Q8ConvParams {
  Conv2dParams conv;                ///< shapes, strides, pads, dilations; groups 1
  const uint8_t* packed = nullptr;  ///< the same table's Q8Q8ConvPackFn output
};
/// Packs int8 codes w (per-channel f16 scales; w.out = c_out, w.in =
/// c_in·kh·kw in (c, ky, kx) order) into the layout the same table's
/// Q8Q8ConvFn reads; returns its size in bytes and writes it when `packed` is
/// not null. Runs once, at load.
using Q8Q8ConvPackFn = int64_t (*)(const schemes::kernels::PackedGemmArgs& w, int64_t kh,
                                   int64_t kw, uint8_t* packed);
using Q8Q8ConvFn = void (*)(const Q8Q8ConvParams& p, const float* x, const float* bias, float* y,
                            const Activation& act);
/// y[i] = act(x[i] + bias) for i < n, on the calling thread; in place allowed.
using F32BiasActFn = void (*)(const Activation& act, float bias, const float* x, float* y,
                              int64_t n);
/// y[i] = f(x[i]) for i < n; in place allowed.
using F32UnaryFn = void (*)(const float* x, float* y, int64_t n);
/// BatchNormalization (inference) then act, as kernels::batch_norm.
using F32BatchNormFn = void (*)(int64_t n, int64_t channels, int64_t spatial, const float* x,
                                const float* scale, const float* bias, const float* mean,
                                const float* var, float epsilon, float* y, const Activation& act);
/// Softmax over the middle axis of [outer, axis, inner], as kernels::softmax.
using F32SoftmaxFn = void (*)(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
/// MaxPool, as kernels::max_pool2d (parameters validated).
using F32PoolFn = void (*)(const Pool2dParams& p, const float* x, float* y);
/// Resize, as kernels::resize2d (parameters validated).
using F32ResizeFn = void (*)(const ResizeParams& p, const float* x, float* y);
/// Scaled dot-product attention of `heads` heads (Vaswani et al., 2017):
/// for each query row i, y_i = softmax_j(q_i·k_j·scale + mask[i, j])·v.
/// q and y [heads, rows, d] contiguous; head h's key j (d contiguous
/// values) at k + h·kv_head_stride + j·key_stride, its value likewise in v
/// (so a cache with room for more keys is read in place: head-major
/// [heads, capacity, d] with kv_head_stride = capacity·d and key_stride = d,
/// or position-major [capacity, heads, d] with kv_head_stride = d and
/// key_stride = heads·d); mask [rows, keys] or null. A row masked everywhere
/// gives zeros.
using F32AttentionFn = void (*)(const float* q, const float* k, const float* v, const float* mask,
                                float* y, int64_t heads, int64_t rows, int64_t keys, int64_t d,
                                int64_t kv_head_stride, int64_t key_stride, float scale);
/// Rotary position embedding (Su et al., 2021, "RoFormer") of `rows` head
/// rows of d values in the rotation-matrix form of the llama graphs
/// (io/llama_graph.h): y = x·cos + (x·R)·sin, (x·R)[c] = Σ_e x[e]·R[e, c] as
/// an FMA chain over e ascending from +0, y[c] = fma(x[c], cos[c],
/// (x·R)[c]·sin[c]). Row i of x at x + i·x_stride, of y at y + i·y_stride (y
/// not overlapping x); cos and sin [d], shared by the rows; R [d, d]
/// row-major. Every kernel runs these operations in this order (bit for bit
/// the same results).
using F32RopeFn = void (*)(const float* x, int64_t x_stride, const float* cos, const float* sin,
                           const float* r, int64_t d, int64_t rows, float* y, int64_t y_stride);

// Scalar references (src/runtime/kernels/*_ref.cpp), serial. f32_conv_ref
// serves every conv path; f32_bias_act_ref and f32_exp_ref use std::exp and
// std::tanh; f32_softmax_ref sums in double; f32_maxpool_ref propagates NaN.
void f32_gemm_ref(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc);
void f32_gemv_ref(bool trans_b, int64_t n, int64_t k, float alpha, const float* x, const float* b,
                  int64_t ldb, float beta, float* y);
void f32_conv_ref(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                  float* y, const Activation& act);
/// The reference's "packing": a copy of w (its own layout).
int64_t f32_conv_pack_ref(const Conv2dParams& p, const float* w, float* packed);
/// Winograd F(4×4, 3×3) weights (Lavin & Gray, CVPR 2016) for a 3×3, groups-1
/// conv: U = G g Gᵀ per (output, input channel), 36 points each, stored per
/// point in panels of 6 output channels, input channel-major:
/// u[((ξ·P + panel)·c_in + ci)·6 + r] (P = ⌈c_out/6⌉, rows past c_out zero):
/// 36·P·6·c_in floats (returned; written when `packed` is not null). The
/// transform runs in double, rounded once. Both Winograd kernels read it.
/// Blocks of a panel's rows × 64 input channels, over linalg's threads: the
/// same bits as f32_conv_winograd_f43_pack_ref at any thread count.
int64_t f32_conv_winograd_f43_pack(const Conv2dParams& p, const float* w, float* packed);
/// The scalar reference of f32_conv_winograd_f43_pack: row by row, channel
/// by channel, each point written to its place.
int64_t f32_conv_winograd_f43_pack_ref(const Conv2dParams& p, const float* w, float* packed);
/// Conv by Winograd F(4×4, 3×3) on f32_conv_winograd_f43_pack's weights, the
/// scalar reference of f32_conv_winograd_f43_avx2 (same transforms, float
/// arithmetic, channel sums in double). Only 3×3, stride 1, groups 1 (any
/// pads, any dilation: with dilation (dh, dw) the outputs of each phase
/// (oy mod dh, ox mod dw) are an undilated conv on that phase's inputs, tiled
/// on their own); conv2d picks it (conv.cpp, winograd_pays). Error
/// against direct convolution: each output within 2⁻¹⁶·Σ|w||x| (the largest
/// over its tile's outputs of their windows' absolute products: the
/// transforms mix the whole 6×6 patch into each output) plus 2⁻²⁰ — the
/// transforms scale inputs by up to 100 (Bᵀ) and products by up to 8² (Aᵀ),
/// against ~9 for a direct sum; tests/runtime/kernels/f32_conv_winograd_test.cpp
/// checks that bound.
void f32_conv_winograd_f43_ref(const Conv2dParams& p, const float* x, const float* packed,
                               const float* bias, float* y, const Activation& act);
void f32_bias_act_ref(const Activation& act, float bias, const float* x, float* y, int64_t n);
/// Ŵ decoded whole by the schemes' scalar decoder, then f32_conv_ref.
void qb_f32_conv_ref(const QbConvParams& p, const float* x, const float* bias, float* y,
                     const Activation& act);
/// Codes and f32 scales copied as they are ([c_out, c_in] int8, then c_out floats).
int64_t q8_q8_conv1x1_pack_ref(const schemes::kernels::PackedGemmArgs& w, uint8_t* packed);
/// Loops after the definition above, int64 sums, f32_bias_act_ref.
void q8_q8_conv1x1_ref(const Q8Q8Conv1x1Params& p, const float* x, const float* bias, float* y,
                       const Activation& act);
/// Codes and f32 scales copied as they are ([c_out, c_in·kh·kw] int8, then c_out floats).
int64_t q8_q8_conv_pack_ref(const schemes::kernels::PackedGemmArgs& w, int64_t kh, int64_t kw,
                            uint8_t* packed);
/// Loops after the definition above (Q8Q8ConvParams): int64 sums, std::fma, f32_bias_act_ref.
void q8_q8_conv_ref(const Q8Q8ConvParams& p, const float* x, const float* bias, float* y,
                    const Activation& act);
void f32_exp_ref(const float* x, float* y, int64_t n);
void f32_batchnorm_ref(int64_t n, int64_t channels, int64_t spatial, const float* x,
                       const float* scale, const float* bias, const float* mean, const float* var,
                       float epsilon, float* y, const Activation& act);
void f32_softmax_ref(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
void f32_maxpool_ref(const Pool2dParams& p, const float* x, float* y);
void f32_resize_ref(const ResizeParams& p, const float* x, float* y);
void f32_attention_ref(const float* q, const float* k, const float* v, const float* mask, float* y,
                       int64_t heads, int64_t rows, int64_t keys, int64_t d, int64_t kv_head_stride,
                       int64_t key_stride, float scale);
void f32_rope_ref(const float* x, int64_t x_stride, const float* cos, const float* sin,
                  const float* r, int64_t d, int64_t rows, float* y, int64_t y_stride);

// Optimised kernels (built when the compiler targets AVX2 and FMA, e.g.
// -march=x86-64-v3; f32_gemm_openblas always). Parallel ones split fixed,
// shape-determined work partitions over OpenMP threads, so results do not
// depend on the thread count.
/// One serial OpenBLAS cblas_sgemm call.
void f32_gemm_openblas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc);
/// Bᵀ stored [n, k]: 8 columns at a time, each an 8-lane FMA chain over k
/// (the tail by masked loads) summed across lanes as ((l0 + l1) + (l2 + l3))
/// + ((l4 + l5) + (l6 + l7)); B stored [k, n]: 32, 8, then masked columns at
/// a time, each one FMA chain over k. No BLAS setup per call.
void f32_gemv_avx2(bool trans_b, int64_t n, int64_t k, float alpha, const float* x, const float* b,
                   int64_t ldb, float beta, float* y);
/// Implicit-im2col GEMM, 6 output channels × 16 output pixels per register
/// tile, epilogue fused; any groups, pads, strides, dilations; honours
/// Conv2dParams::column_block. Packs the weights (f32_conv_pack_6x16_avx2)
/// on every call; f32_conv_gemm_packed_6x16_avx2 takes them packed.
void f32_conv_gemm_6x16_avx2(const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, float* y, const Activation& act);
/// Per group, panels of 6 output channels k-major (ap[g][panel][k][r], rows
/// past c_out/groups zero): groups·⌈(c_out/groups)/6⌉·6·(c_in/groups)·kh·kw floats.
int64_t f32_conv_pack_6x16_avx2(const Conv2dParams& p, const float* w, float* packed);
void f32_conv_gemm_packed_6x16_avx2(const Conv2dParams& p, const float* x, const float* packed,
                                    const float* bias, float* y, const Activation& act);
/// f32_conv_winograd_f43_ref's algorithm, blocks of 16 tiles (two runs of 8
/// along an output row, or 16 consecutive tiles of any rows and phases where
/// that leaves fewer lanes idle, and always when dilated), up to 4 blocks per
/// work item sharing each weight panel: input transforms 8 tiles per AVX2
/// vector, the 36 per-point products [c_out × c_in]·[c_in × 16] by the 6×16
/// micro-kernel, the output transform and epilogue per tile run. Same
/// contract and bound.
void f32_conv_winograd_f43_avx2(const Conv2dParams& p, const float* x, const float* packed,
                                const float* bias, float* y, const Activation& act);
/// f32_conv_winograd_f43_avx2's convolution with the 36 per-point products
/// on AVX-512F (function target attributes; the registry picks it where
/// cpu_features() has AVX-512F): a work item's blocks in pairs, 12 output
/// channels (two weight panels) × 32 tiles per register tile. Each output is
/// the AVX2 kernel's FMA chain (same products in the same order) and the
/// transforms are the AVX2 ones: the two give the same bits. Same contract
/// and bound.
void f32_conv_winograd_f43_avx512(const Conv2dParams& p, const float* x, const float* packed,
                                  const float* bias, float* y, const Activation& act);
/// 1×1 stride-1 unpadded conv (any groups) on f32_conv_pack_6x16_avx2's
/// weights (packed once, at load) and x read in place: 6 output channels ×
/// 16 pixels per register tile (the strided 6×16 micro-kernel), bias and
/// activation on the tile in L1, a strip's last < 16 pixels through a
/// zero-padded copy; work items (image, group, block_columns pixels) over
/// OpenMP threads. Sums in ascending k (FMA, in chunks of 256). conv2d runs
/// it where it beats the gemm path (conv.cpp).
void f32_conv1x1_6x16_avx2(const Conv2dParams& p, const float* x, const float* packed,
                           const float* bias, float* y, const Activation& act);
/// Per group, panels of 12 output channels k-major (ap[g][panel][k][r],
/// rows past c_out/groups zero): groups·⌈(c_out/groups)/12⌉·12·(c_in/groups)
/// floats (returned; written when `packed` is not null). Only the 1×1
/// weight shape of p matters; f32_conv1x1_12x32_avx512 reads it.
int64_t f32_conv1x1_pack_12x32(const Conv2dParams& p, const float* w, float* packed);
/// f32_conv1x1_6x16_avx2's operation with AVX-512F (function target
/// attributes; the registry picks it where cpu_features() has AVX-512F) on
/// f32_conv1x1_pack_12x32's weights: 12 output channels × 32 pixels per
/// register tile, each panel's column one contiguous 48-byte read per k, a
/// strip's last < 32 pixels by masked loads in place. Each output is one FMA
/// chain over ascending k from +0, as in the AVX2 kernel, and the epilogue is
/// f32_bias_act_avx2 on the tile: the two kernels give the same bits.
void f32_conv1x1_12x32_avx512(const Conv2dParams& p, const float* x, const float* packed,
                              const float* bias, float* y, const Activation& act);
/// Direct depthwise conv (groups == c_in == c_out): 2 output rows × 32
/// columns in registers (4 rows on planes of at most 16 columns), a row's
/// last 1..31 columns as one block of up to 4 vectors, the last masked, from
/// a zero-padded, stride-phase-split plane copy.
void f32_conv_dw_2x32_avx2(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                           float* y, const Activation& act);
/// 6 output channels × 16 pixels per register tile, the 6 rows of Ŵ decoded
/// once per block of pixels into a small buffer (the schemes' AVX2 panel
/// decoder), pixels read in place for 1×1 stride-1 unpadded convs and through
/// the implicit-im2col gather otherwise, bias and activation in the epilogue;
/// work items (image, pixel block) over OpenMP threads. Sums in ascending k (FMA).
void qb_f32_conv_6x16_avx2(const QbConvParams& p, const float* x, const float* bias, float* y,
                           const Activation& act);
/// Panels of 8 output channels, inputs in quads: codes[panel][k/4][8][4]
/// (rows past c_out and inputs past c_in zero), then 128·Σ_k q[o, k] as int32
/// and f16(scale[o]) as f32 per padded row. Both kernels below read it.
int64_t q8_q8_conv1x1_pack_8x16(const schemes::kernels::PackedGemmArgs& w, uint8_t* packed);
/// Per block of 16 pixels: the columns quantized (vectorised, the reference's
/// f32 operations, so the same codes) into a quad-interleaved u8 panel
/// qx + 128 (L1-resident), then 8 channels × 16 pixels register tiles;
/// work items of 8 blocks over OpenMP threads. _avx2: VPMADDUBSW with the sign trick
/// (|q| ≤ 128 unsigned × qx·sign(q) signed, exact pairs) and VPMADDWD;
/// _avx512vnni: VPDPBUSD on ymm (AVX512-VNNI + VL; u8 qx + 128 × s8 q, four
/// products per int32 lane, 16 per tile row per step) minus 128·Σq.
/// Epilogue f32 as the reference, then f32_bias_act_avx2 per channel row of
/// each work item (image, 128 pixels) while it is in cache.
void q8_q8_conv1x1_8x16_avx2(const Q8Q8Conv1x1Params& p, const float* x, const float* bias,
                             float* y, const Activation& act);
void q8_q8_conv1x1_8x16_avx512vnni(const Q8Q8Conv1x1Params& p, const float* x, const float* bias,
                                   float* y, const Activation& act);
/// Panels of 6 output channels, taps row-major, inputs in quads:
/// codes[panel][ky][kx][c/4][6][4] (rows past c_out and inputs past c_in
/// zero), then −128·Σ_{c, ky, kx} q[o, c, ky, kx] as int32 and f16(scale[o])
/// as f32 per padded row. q8_q8_conv_6x32_avx512vnni reads it; where
/// c_in·kh·kw > 132104 (sums past int32) it is q8_q8_conv_pack_ref's layout
/// (CompressedConv takes at most kQ8Q8Conv1x1MaxIn, so not from the runtime).
int64_t q8_q8_conv_pack_6x32(const schemes::kernels::PackedGemmArgs& w, int64_t kh, int64_t kw,
                             uint8_t* packed);
/// The W8A8 k×k conv (Q8Q8ConvParams, one scale per image) on VPDPBUSD
/// (AVX512-F/BW/VL/VNNI): the image maxima over fixed chunks; every padded
/// input row a window reads quantized once per call (the reference's codes,
/// vectorised; division-free where provably equal) into u8 qx + 128 laid out
/// [row][c/4][column phase mod stride_w][column / stride_w][4] (padding:
/// qx = 0); tiles of 12 channels × 32 columns of one output row (6 × 32,
/// 12 × 16, 6 × 16 at the edges), one int32 sum per output over every tap
/// and quad (started at −128·Σq), then f32(Σ)·(s·scale[o]) and
/// f32_bias_act_avx2 per channel over bands of 8 output rows, the work items
/// of parallel_for. Same bits as q8_q8_conv_ref at any thread count;
/// c_in·kh·kw > 132104 goes to it (not from the runtime, which takes at most
/// kQ8Q8Conv1x1MaxIn).
void q8_q8_conv_6x32_avx512vnni(const Q8Q8ConvParams& p, const float* x, const float* bias,
                                float* y, const Activation& act);
/// Bias + activation 8 lanes at a time (Cephes exp/tanh polynomials, ~2 ulp).
void f32_bias_act_avx2(const Activation& act, float bias, const float* x, float* y, int64_t n);
void f32_exp_avx2(const float* x, float* y, int64_t n);
void f32_batchnorm_avx2(int64_t n, int64_t channels, int64_t spatial, const float* x,
                        const float* scale, const float* bias, const float* mean, const float* var,
                        float epsilon, float* y, const Activation& act);
void f32_softmax_avx2(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
/// 2×2 stride-2 unpadded windows 8 outputs per vmaxps (a NaN there may be
/// dropped, as vmaxps and onnxruntime do); other windows scalar, NaN kept.
void f32_maxpool_avx2(const Pool2dParams& p, const float* x, float* y);
/// Nearest by index tables; linear separably, x by AVX2 gathers then y.
void f32_resize_avx2(const ResizeParams& p, const float* x, float* y);
/// Scores of 4 keys per 8-lane FMA pass, Cephes exponentials, values
/// summed in 8-lane accumulators per head_dim chunk.
void f32_attention_avx2(const float* q, const float* k, const float* v, const float* mask, float* y,
                        int64_t heads, int64_t rows, int64_t keys, int64_t d,
                        int64_t kv_head_stride, int64_t key_stride, float scale);
/// 8 columns of a row per pass: x[e] broadcast against row e of R in one
/// 8-lane FMA chain, the last columns by masked loads and stores.
void f32_rope_avx2(const float* x, int64_t x_stride, const float* cos, const float* sin,
                   const float* r, int64_t d, int64_t rows, float* y, int64_t y_stride);

/// One kernel per operation for one instruction set.
struct KernelTable {
  Isa isa;
  F32GemmFn gemm;         ///< MatMul, Gemm, LSTM, ConvTranspose, 1×1 Conv
  F32GemvFn gemv;         ///< MatMul and Gemm of one row (a decoder step)
  F32ConvFn conv_gemm;    ///< Conv, neither depthwise nor 1×1 stride-1 unpadded
  F32ConvFn conv_dw;      ///< depthwise Conv
  F32BiasActFn bias_act;  ///< activations and conv/gemm epilogues
  F32UnaryFn exp;         ///< Exp
  F32BatchNormFn batch_norm;
  F32SoftmaxFn softmax;
  F32PoolFn max_pool;
  F32ResizeFn resize;
  F32ConvPackFn conv_pack;      ///< conv_gemm's weights packed once (at load)
  F32ConvPackedFn conv_packed;  ///< conv_gemm on conv_pack's weights
  F32AttentionFn attention;     ///< ai.tailor Attention
  F32RopeFn rope;               ///< ai.tailor GroupQueryAttention's RoPE
  /// 3×3 stride-1 groups-1 Conv on f32_conv_winograd_f43_pack's weights
  /// where conv2d's rule says it pays
  F32ConvPackedFn conv_winograd;
  QbConvFn qb_conv;  ///< ai.tailor CompressedConv on packed codes (groups 1)
  /// int8-a8 CompressedConv, 1×1 stride 1 unpadded, and its weight packing
  Q8Q8Conv1x1PackFn q8q8_conv1x1_pack;
  Q8Q8Conv1x1Fn q8q8_conv1x1;
  /// 1×1 stride-1 unpadded Conv where conv2d's rule picks it over gemm +
  /// bias_act (conv.cpp), on the weights of conv1x1_pack (packed once, at
  /// load, by pack_conv2d_weights; per call for weights that are not constant)
  F32ConvPackFn conv1x1_pack;
  F32ConvPackedFn conv1x1;
  /// The largest plane (H·W) conv2d gives conv1x1; larger ones take the gemm
  /// path (where each kernel stops paying, kernels_bench BM_Conv1x1Path)
  int64_t conv1x1_max_pixels;
  /// int8-a8 CompressedConv other than 1×1 stride 1 unpadded (groups 1), and its weight packing
  Q8Q8ConvPackFn q8q8_conv_pack;
  Q8Q8ConvFn q8q8_conv;
  /// The smallest output plane side (rows and columns) on which conv2d's
  /// automatic rule picks conv_winograd over the implicit GEMM (conv.cpp:
  /// 16, or 8 with the AVX-512 products, kernels_bench BM_Conv3x3Path)
  int64_t winograd_min_plane = 16;
  /// Whether matmul runs a product y = a·b with one b [k, n] (n ≥ 16) as the
  /// 1×1 conv kernel, a as its weights (conv1x1_pack per call) and b as its
  /// [k, n] image, instead of gemm (ConvTranspose's columns Wᵀ·X the same
  /// way): where conv1x1 is
  /// f32_conv1x1_12x32_avx512, 1.7–2.0× OpenBLAS's AVX2 sgemm on every shape
  /// of kernels_bench BM_MatmulFewRows (m 5–512, k 64–480, n 512–6625).
  bool matmul_conv1x1 = false;
};

/// Whether `isa`'s table was compiled in and this CPU runs it (cpu_features():
/// AVX2 and FMA for Isa::avx2). The avx2 table's q8q8_conv1x1 is the
/// AVX512-VNNI kernel where the CPU has AVX512-VNNI and AVX512-VL, its
/// q8q8_conv (with q8q8_conv_pack) q8_q8_conv_6x32_avx512vnni where it has
/// AVX512-F, BW, VL and VNNI, and its
/// conv1x1 (with conv1x1_pack) f32_conv1x1_12x32_avx512, also for matmul
/// (matmul_conv1x1), and its conv_winograd f32_conv_winograd_f43_avx512 where
/// it has AVX-512F.
bool isa_available(Isa isa);
/// The table of `isa`; throws tailor::Error when it is not available.
const KernelTable& kernel_table(Isa isa);
/// The table the operators use: the one TAILOR_KERNELS forces (forced_isa(),
/// tailor::Error when that one is not available), else the fastest available.
/// Chosen on the first call.
const KernelTable& active_kernels();
/// One line naming the table's kernels per operation, e.g.
/// "avx2: gemm=f32_gemm_openblas conv_gemm=f32_conv_gemm_6x16_avx2 ...".
std::string describe(const KernelTable& table);

}  // namespace tailor::runtime::kernels
