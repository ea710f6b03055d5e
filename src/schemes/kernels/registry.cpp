// The one place that decides which scheme kernel runs: kernels never test
// CPU features themselves (the query is tailor::cpu_features(), shared with
// the runtime kernels' registry).
#include <fmt/format.h>

#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

constexpr GemmKernels kRef{Isa::ref,          q8_f32_gemm_ref,   q4_f32_gemm_ref,
                           q3_f32_gemm_ref,   q2_f32_gemm_ref,   s24_f32_gemm_ref,
                           q8_q8_gemm_ref,    q8_f32_decode_ref, q4_f32_decode_ref,
                           q3_f32_decode_ref, q2_f32_decode_ref};

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
constexpr GemmKernels kAvx2{Isa::avx2,          q8_f32_gemm_avx2,   q4_f32_gemm_avx2,
                            q3_f32_gemm_avx2,   q2_f32_gemm_avx2,   s24_f32_gemm_avx2,
                            q8_q8_gemm_avx2,    q8_f32_decode_avx2, q4_f32_decode_avx2,
                            q3_f32_decode_avx2, q2_f32_decode_avx2};
constexpr bool kAvx2Built = true;
#else
constexpr GemmKernels kAvx2 = kRef;
constexpr bool kAvx2Built = false;
#endif

// The avx2 table with the batch-1 GEMVs on AVX-512 where this CPU has
// AVX-512F/BW/VL (the same packed weights and f32 arithmetic).
const GemmKernels& avx2_table() {
  static const GemmKernels table = [] {
    GemmKernels t = kAvx2;
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512bw && f.avx512vl) {
      t.q8 = q8_f32_gemm_avx512;
      t.q4 = q4_f32_gemm_avx512;
    }
#endif
    return t;
  }();
  return table;
}

}  // namespace

PackedGemmFn GemmKernels::packed(int bits) const {
  switch (bits) {
    case 8:
      return q8;
    case 4:
      return q4;
    case 3:
      return q3;
    case 2:
      return q2;
    default:
      throw Error("kernels", fmt::format("no packed kernel for {}-bit codes", bits));
  }
}

PackedDecodeFn GemmKernels::decode(int bits) const {
  switch (bits) {
    case 8:
      return q8_decode;
    case 4:
      return q4_decode;
    case 3:
      return q3_decode;
    case 2:
      return q2_decode;
    default:
      throw Error("kernels", fmt::format("no decoder for {}-bit codes", bits));
  }
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::ref:
      return true;
    case Isa::avx2:
      // The AVX2 kernels also use FMA and F16C (every x86-64-v3 CPU has both).
      return kAvx2Built && cpu_features().avx2 && cpu_features().fma && cpu_features().f16c;
  }
  return false;
}

const GemmKernels& gemm_kernels(Isa isa) {
  check(isa_available(isa), "kernels",
        isa == Isa::avx2 ? "AVX2/FMA/F16C kernels are not built in or not supported by this CPU"
                         : "unknown instruction set");
  return isa == Isa::avx2 ? avx2_table() : kRef;
}

const GemmKernels& best_gemm_kernels() {
  static const GemmKernels& best = []() -> const GemmKernels& {
    if (const auto forced = forced_isa()) return gemm_kernels(*forced);
    return isa_available(Isa::avx2) ? avx2_table() : kRef;
  }();
  return best;
}

}  // namespace tailor::schemes::kernels
