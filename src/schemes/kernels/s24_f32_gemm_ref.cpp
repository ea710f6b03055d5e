// Scalar reference of the 2:4-sparse kernel: Y[b, o] = Σ_t value_t·x[4·(t/2) + index_t].
#include "../packing.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {

void s24_f32_gemm_ref(const Sparse24GemmArgs& a) {
  const int64_t kr = sparse24_kept_per_row(a.in);
  for (int64_t b = 0; b < a.batch; ++b) {
    const float* x = a.x + b * a.in;
    for (int64_t o = 0; o < a.out; ++o) {
      float y = 0;
      for (int64_t t = 0; t < kr; ++t) {
        const int64_t j = 4 * (t / 2) + detail::get_ucode(a.indices, a.index_bytes, o * kr + t, 2);
        y += a.values[o * kr + t] * x[j];
      }
      a.y[b * a.out + o] = y;
    }
  }
}

}  // namespace tailor::schemes::kernels
