// Micro-kernels that multiply activations by compressed weights without
// decoding them whole: packed-integer codes with f16 scales (int8, int4,
// int3, ternary) and 2:4 sparsity. XNNPACK-style names say datatype,
// operation and instruction set; a scalar reference sits beside each AVX2/FMA
// version, and gemm_kernels() is the one place that picks which runs.
#pragma once

#include <cstdint>

#include "tailor/core/cpu.h"

namespace tailor::schemes::kernels {

/// Y[batch, out] = X[batch, in]·Ŵᵀ for Ŵ[o, j] = q(o·in + j)·f16(scales[o·G + j/group]),
/// G = ceil(in/group) scales per row. The codes q form one bitstream over
/// the row-major [out, in] weight: code i is the two's-complement integer in
/// bits [i·bits, (i+1)·bits) of the stream, bit k being bit k mod 8 of byte
/// k/8 (LSB first; int4 puts element 2t in the low nibble of byte t).
struct PackedGemmArgs {
  const uint8_t* codes = nullptr;    ///< ceil(out·in·bits/8) bytes
  uint64_t code_bytes = 0;           ///< size of `codes` in bytes
  const uint16_t* scales = nullptr;  ///< f16 bit patterns, [out, ceil(in/group)]
  int64_t out = 0;                   ///< rows of Ŵ (elements)
  int64_t in = 0;                    ///< columns of Ŵ, the reduction axis (elements)
  int64_t group = 0;                 ///< inputs per scale (elements); `in` for per-channel
  const float* x = nullptr;          ///< activations [batch, in], row-major
  int64_t batch = 0;                 ///< rows of X
  float* y = nullptr;                ///< output [batch, out], row-major, overwritten
};

/// Y[batch, out] = X[batch, in]·Ŵᵀ for a 2:4-sparse Ŵ: row o keeps
/// kept_per_row(in) values, two per full group of 4 inputs and min(2, size)
/// of a shorter last group, in input order. Their positions within their
/// group (0–3) are 2-bit unsigned codes packed LSB first like the codes above;
/// the two positions of a group are distinct and ascending (the encoder's
/// output; the kernels rely on it).
struct Sparse24GemmArgs {
  const float* values = nullptr;     ///< [out, kept_per_row(in)]
  const uint8_t* indices = nullptr;  ///< ceil(2·out·kept_per_row(in)/8) bytes
  uint64_t index_bytes = 0;          ///< size of `indices` in bytes
  int64_t out = 0;                   ///< rows of Ŵ (elements)
  int64_t in = 0;                    ///< columns of Ŵ (elements)
  const float* x = nullptr;          ///< activations [batch, in], row-major
  int64_t batch = 0;                 ///< rows of X
  float* y = nullptr;                ///< output [batch, out], row-major, overwritten
};

/// Values a 2:4-sparse row of `in` inputs keeps: 2·floor(in/4) + min(2, in mod 4).
inline int64_t sparse24_kept_per_row(int64_t in) {
  const int64_t r = in % 4;
  return 2 * (in / 4) + (r < 2 ? r : 2);
}

using PackedGemmFn = void (*)(const PackedGemmArgs&);
/// Rows [o0, o0 + rows) of Ŵ (PackedGemmArgs's codes, scales, out, in and
/// group; x, batch and y unused) decoded into dst [rows, in] f32 row-major:
/// dst[r·in + j] = q(o·in + j)·f16(scale[o, j/group]) for o = o0 + r, the
/// product rounded once (the same bits in every version). The caller keeps
/// o0 + rows ≤ out. Used to decode a small panel of Ŵ at a time into a
/// cache-resident buffer (runtime's qb_f32_conv1x1 kernels), never the whole weight.
using PackedDecodeFn = void (*)(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
using Sparse24GemmFn = void (*)(const Sparse24GemmArgs&);

/// Scalar references: straightforward loops, the definition the fast kernels are tested against.
void q8_f32_gemm_ref(const PackedGemmArgs& args);
void q4_f32_gemm_ref(const PackedGemmArgs& args);
void q3_f32_gemm_ref(const PackedGemmArgs& args);
void q2_f32_gemm_ref(const PackedGemmArgs& args);
void s24_f32_gemm_ref(const Sparse24GemmArgs& args);
void q8_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q4_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q3_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q2_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);

/// W8A8: int8 weights × int8 activations quantized per row at run time.
/// Each row b of X becomes qx[b, j] = clamp(round_half_away(x[b, j]/s_x[b]),
/// −127, 127) with s_x[b] = max_j abs(x[b, j])/127 in f32 (round_half_away as
/// the int8 encoder's; a row whose s_x is 0 gives qx = 0). Then
///   Y[b, o] = f32(Σ_j qx[b, j]·q[o, j]) · (s_x[b]·f16(scales[o]))
/// with the integer sum exact (int64) and the last two products in f32, in
/// this order, so every kernel gives the same bits. A row of X holding a NaN
/// or an infinity gives a row of NaN. Codes are int8 [out, in] (any value,
/// −128 included); per channel only: `group` must be ≥ `in` (tailor::Error
/// otherwise). This changes the arithmetic (activation rounding): it is the
/// scheme `int8-a8`, not a faster `int8`.
void q8_q8_gemm_ref(const PackedGemmArgs& args);

/// AVX2/FMA/F16C versions (built when the compiler targets AVX2, e.g.
/// -march=x86-64-v3): output rows split across OpenMP threads (OMP_NUM_THREADS
/// bounds them); batches up to 8 fuse decoding into the dot products, larger
/// batches decode 16-row panels of Ŵ per thread into an L2-sized buffer and
/// multiply them with register-blocked FMA tiles.
void q8_f32_gemm_avx2(const PackedGemmArgs& args);
void q4_f32_gemm_avx2(const PackedGemmArgs& args);
void q3_f32_gemm_avx2(const PackedGemmArgs& args);
void q2_f32_gemm_avx2(const PackedGemmArgs& args);
void s24_f32_gemm_avx2(const Sparse24GemmArgs& args);
/// Panel decoders: 32 codes widened per step (the GEMMs' decode), times the
/// group's scale; serial (callers run them per thread).
void q8_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q4_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q3_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
void q2_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst);
/// W8A8 on AVX2 integer dot products: 32 codes per step by VPMADDUBSW (u8 ×
/// s8 → pairs summed in s16) and VPMADDWD (pairs → s32). VPMADDUBSW saturates
/// its s16 pair sums, so the unsigned operand is abs(q) (≤ 128) and the signed
/// one qx with q's sign (VPSIGNB: |qx| ≤ 127, so never −128): a pair sum is
/// at most 2·128·127 = 32512 < 2^15, exact (the sign trick). 4×2 register
/// tiles of X rows × Ŵ rows; int32 lanes are reduced every 2^16 inputs.
void q8_q8_gemm_avx2(const PackedGemmArgs& args);

/// Batch-1 GEMV (LLM decode) on int8 / int4 codes, AVX2/FMA/F16C, the same
/// product and f32 arithmetic as q8/q4_f32_gemm_ref at batch 1 (weight-only:
/// x is not rounded; sums in another order, so within f32 rounding of the
/// reference). Built to stream the weights: 4 rows of Ŵ per pass share each
/// load of x, two accumulators per row, software prefetch on every row,
/// codes widened straight from memory (VPMOVSXBD; int4 nibbles by shifts,
/// against x permuted once per call). Rows split across OpenMP threads in
/// tasks of whole cache lines of y. q8/q4_f32_gemm_avx2 call these at batch
/// 1. Throws tailor::Error unless batch is 1; q4 also needs
/// q4_gemv_supported(args).
void q8_f32_gemv_avx2(const PackedGemmArgs& args);
void q4_f32_gemv_avx2(const PackedGemmArgs& args);
/// Whether q4_f32_gemv_avx2 takes `args`: batch 1, an even `in`, and groups
/// of a multiple of 16 inputs or one group per row (group ≥ in).
inline bool q4_gemv_supported(const PackedGemmArgs& args) {
  return args.batch == 1 && args.in % 2 == 0 && (args.group >= args.in || args.group % 16 == 0);
}

/// The same GEMVs with AVX-512F/BW/VL (16-lane vectors; compiled by function
/// target attributes into the x86-64-v3 build, so callable only where
/// cpu_features() reports avx512f, avx512bw and avx512vl — the registry's
/// choice). Same product and f32 arithmetic as q8/q4_f32_gemm_ref at batch 1
/// (sums in another order). int8: 64 inputs per step, masked loads for a
/// group's last inputs. int4: codes to f32 by VPERMPS from a 16-entry table
/// (the int32 lane of 8 nibbles shifted by 4·s: nibble s of 16 lanes per
/// step), x permuted once per call to match, in blocks of 128 inputs (the
/// last in mod 128 by a masked load). Throw tailor::Error unless batch is 1;
/// q4 also needs q4_gemv_avx512_supported(args).
void q8_f32_gemv_avx512(const PackedGemmArgs& args);
void q4_f32_gemv_avx512(const PackedGemmArgs& args);
/// Whether q4_f32_gemv_avx512 takes `args`: q4_gemv_supported(args) and
/// groups of 16, 32, 64, a multiple of 128 or all inputs (each lane's 8
/// inputs in one group, and lane k of every 128-input block in the same
/// group relative to the block's first).
inline bool q4_gemv_avx512_supported(const PackedGemmArgs& args) {
  return q4_gemv_supported(args) && (args.group >= args.in || args.group == 16 ||
                                     args.group == 32 || args.group == 64 || args.group % 128 == 0);
}
/// q8/q4_f32_gemm_avx2 with the AVX-512 GEMV at batch 1 (where
/// q4_gemv_avx512_supported for int4); the AVX2 kernels otherwise. The
/// registry's q8 / q4 on CPUs with AVX-512F/BW/VL.
void q8_f32_gemm_avx512(const PackedGemmArgs& args);
void q4_f32_gemm_avx512(const PackedGemmArgs& args);

/// Instruction sets a kernel table exists for (tailor/core/cpu.h, shared with
/// the runtime kernels' registry).
using tailor::Isa;

/// One kernel per weight format for one instruction set.
struct GemmKernels {
  Isa isa;
  PackedGemmFn q8;
  PackedGemmFn q4;
  PackedGemmFn q3;
  PackedGemmFn q2;
  Sparse24GemmFn s24;
  PackedGemmFn q8q8;  ///< W8A8 (q8_q8_gemm_*)
  PackedDecodeFn q8_decode;
  PackedDecodeFn q4_decode;
  PackedDecodeFn q3_decode;
  PackedDecodeFn q2_decode;

  /// The packed kernel for `bits` (8, 4, 3 or 2); throws tailor::Error otherwise.
  PackedGemmFn packed(int bits) const;
  /// The panel decoder for `bits` (8, 4, 3 or 2); throws tailor::Error otherwise.
  PackedDecodeFn decode(int bits) const;
};

/// Whether `isa` was compiled in and this CPU runs it (cpu_features(): AVX2,
/// FMA and F16C for Isa::avx2).
bool isa_available(Isa isa);
/// The kernels of `isa`; throws tailor::Error when it is not available.
const GemmKernels& gemm_kernels(Isa isa);
/// The kernels the schemes use: those TAILOR_KERNELS forces (forced_isa();
/// tailor::Error when not available), else the fastest available (AVX2
/// where available, else the references). Chosen on the first call.
const GemmKernels& best_gemm_kernels();

}  // namespace tailor::schemes::kernels
