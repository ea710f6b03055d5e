// Scalar references of the packed-code kernels (int8, int4, int3, ternary):
// Y[b, o] = Σ_groups f16(scale)·Σ_j q·x, one element at a time.
#include <algorithm>

#include "../packing.h"
#include "tailor/core/dtype.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

void packed_gemm_ref(const PackedGemmArgs& a, int bits) {
  const int64_t groups = (a.in + a.group - 1) / a.group;
  for (int64_t b = 0; b < a.batch; ++b) {
    const float* x = a.x + b * a.in;
    for (int64_t o = 0; o < a.out; ++o) {
      float y = 0;
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t j1 = std::min(a.in, (g + 1) * a.group);
        float acc = 0;
        for (int64_t j = g * a.group; j < j1; ++j)
          acc += static_cast<float>(detail::get_code(a.codes, a.code_bytes, o * a.in + j, bits)) *
                 x[j];
        y += f16_to_f32(a.scales[o * groups + g]) * acc;
      }
      a.y[b * a.out + o] = y;
    }
  }
}

void packed_decode_ref(const PackedGemmArgs& a, int64_t o0, int64_t rows, float* dst, int bits) {
  const int64_t groups = (a.in + a.group - 1) / a.group;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < a.in; ++j) {
      const int64_t o = o0 + r;
      dst[r * a.in + j] =
          static_cast<float>(detail::get_code(a.codes, a.code_bytes, o * a.in + j, bits)) *
          f16_to_f32(a.scales[o * groups + j / a.group]);
    }
}

}  // namespace

void q8_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  packed_decode_ref(args, o0, rows, dst, 8);
}
void q4_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  packed_decode_ref(args, o0, rows, dst, 4);
}
void q3_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  packed_decode_ref(args, o0, rows, dst, 3);
}
void q2_f32_decode_ref(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  packed_decode_ref(args, o0, rows, dst, 2);
}

void q8_f32_gemm_ref(const PackedGemmArgs& args) {
  packed_gemm_ref(args, 8);
}
void q4_f32_gemm_ref(const PackedGemmArgs& args) {
  packed_gemm_ref(args, 4);
}
void q3_f32_gemm_ref(const PackedGemmArgs& args) {
  packed_gemm_ref(args, 3);
}
void q2_f32_gemm_ref(const PackedGemmArgs& args) {
  packed_gemm_ref(args, 2);
}

}  // namespace tailor::schemes::kernels
