// The one place that decides which kernel runs: kernels never test CPU
// features themselves.
#include <fmt/format.h>

#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

constexpr GemmKernels kRef{Isa::ref,        q8_f32_gemm_ref, q4_f32_gemm_ref,
                           q3_f32_gemm_ref, q2_f32_gemm_ref, s24_f32_gemm_ref};

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

bool isa_available(Isa isa) {
  return isa == Isa::ref;
}

const GemmKernels& gemm_kernels(Isa isa) {
  check(isa_available(isa), "kernels", "the requested instruction set is not available");
  return kRef;
}

const GemmKernels& best_gemm_kernels() {
  return kRef;
}

}  // namespace tailor::schemes::kernels
