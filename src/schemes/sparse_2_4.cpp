// `sparse-2:4`: N:M structured sparsity with N = 2, M = 4 along the reduction
// axis, as sparse tensor cores require (Mishra et al., "Accelerating Sparse
// Deep Neural Networks", 2021): in each group of 4 consecutive inputs of a
// row keep the 2 of largest magnitude (ties: lower index); a last group
// shorter than 4 keeps min(2, its size).
#include <algorithm>
#include <cmath>

#include "catalog.h"
#include "common.h"
#include "packing.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::detail {
namespace {

/// Factors "values" f32 [out, kept_per_row(in)] (kept values in input order)
/// and "indices" u8 [ceil(2·kept/8)]: each kept value's position in its group
/// of 4, 2-bit codes packed LSB first. Kept value t of a row lies in group t/2.
class Sparse24Weight final : public Encoded {
 public:
  Sparse24Weight(int64_t out, int64_t in, Tensor values, Tensor indices)
      : Encoded("sparse-2:4", out, in,
                {{"values", std::move(values)}, {"indices", std::move(indices)}}) {}

  Tensor decode() const override {
    const int64_t kr = kernels::sparse24_kept_per_row(in());
    const float* v = factor("values").data<float>();
    const Tensor& idx = factor("indices");
    const auto* codes = reinterpret_cast<const uint8_t*>(idx.raw());
    Tensor w = Tensor::zeros(DType::f32, {out(), in()});
    float* p = w.mutable_data<float>();
    for (int64_t o = 0; o < out(); ++o)
      for (int64_t t = 0; t < kr; ++t) {
        const int64_t j = 4 * (t / 2) + get_ucode(codes, idx.nbytes(), o * kr + t, 2);
        p[o * in() + j] = v[o * kr + t];
      }
    return w;
  }

  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    Tensor y = Tensor::zeros(DType::f32, {batch, out()});
    const Tensor& idx = factor("indices");
    kernels::Sparse24GemmArgs a;
    a.values = factor("values").data<float>();
    a.indices = reinterpret_cast<const uint8_t*>(idx.raw());
    a.index_bytes = idx.nbytes();
    a.out = out();
    a.in = in();
    a.x = xc.data<float>();
    a.batch = batch;
    a.y = y.mutable_data<float>();
    kernels::best_gemm_kernels().s24(a);
    return y;
  }

  int64_t macs(int64_t batch) const override {
    return batch * out() * kernels::sparse24_kept_per_row(in());
  }
};

std::unique_ptr<Encoded> encode_sparse24(const Tensor& w, const SchemeParams&) {
  const Tensor m = weight_matrix(w, "sparse-2:4");
  const int64_t out = m.dim(0), in = m.dim(1);
  const int64_t kr = kernels::sparse24_kept_per_row(in);
  const float* p = m.data<float>();
  Tensor values = Tensor::zeros(DType::f32, {out, kr});
  Tensor indices = Tensor::zeros(DType::u8, {static_cast<int64_t>(packed_bytes(out * kr, 2))});
  float* v = values.mutable_data<float>();
  auto* codes = reinterpret_cast<uint8_t*>(indices.mutable_raw());
  for (int64_t o = 0; o < out; ++o) {
    int64_t t = 0;
    for (int64_t j0 = 0; j0 < in; j0 += 4) {
      const int size = static_cast<int>(std::min<int64_t>(4, in - j0));
      const float* g = p + o * in + j0;
      // The largest magnitude, then the largest of the rest; strict > keeps the
      // lower index on ties. Groups of 1 or 2 keep everything.
      int first = 0, second = size > 1 ? 1 : -1;
      if (size > 2) {
        for (int k = 1; k < size; ++k)
          if (std::abs(g[k]) > std::abs(g[first])) first = k;
        second = first == 0 ? 1 : 0;
        for (int k = 0; k < size; ++k)
          if (k != first && std::abs(g[k]) > std::abs(g[second])) second = k;
        if (second < first) std::swap(first, second);
      }
      for (int k : {first, second}) {
        if (k < 0) continue;
        v[o * kr + t] = g[k];
        put_code(codes, o * kr + t, 2, k);
        ++t;
      }
    }
  }
  return std::make_unique<Sparse24Weight>(out, in, std::move(values), std::move(indices));
}

}  // namespace

std::unique_ptr<Encoded> sparse24_from_factors(int64_t out, int64_t in, Tensor values,
                                               Tensor indices) {
  return std::make_unique<Sparse24Weight>(out, in, std::move(values), std::move(indices));
}

const SchemeTraits kSparse24Traits{
    .kind = SchemeKind::sparse_2_4,
    .pattern = "sparse-2:4",
    .reference = "2:4 structured sparsity along the reduction axis (Mishra et al., 2021)",
    .label = [](const SchemeParams&) { return std::string("sparse-2:4"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    // 4·kept (f32 values) + ceil(2·kept/8) (2-bit indices).
    .bytes = [](const Shape& s, const SchemeParams&) -> uint64_t {
      const MatrixDims d = matrix_dims(s);
      const int64_t kept = d.out * kernels::sparse24_kept_per_row(d.in);
      return 4 * static_cast<uint64_t>(kept) + packed_bytes(kept, 2);
    },
    .encode = encode_sparse24,
};

}  // namespace tailor::schemes::detail
