// `dense`: W kept as f32, the baseline every scheme is compared with.
#include <memory>

#include "catalog.h"
#include "common.h"
#include "tailor/linalg/blas.h"

namespace tailor::schemes::detail {
namespace {

/// Factor "w": f32 [out, in], W itself.
class DenseWeight final : public Encoded {
 public:
  explicit DenseWeight(Tensor w) : Encoded("dense", w.dim(0), w.dim(1), {{"w", w}}) {}

  Tensor decode() const override { return factor("w").clone(); }

  Tensor matmul(const Tensor& x) const override {
    int64_t batch = 0;
    const Tensor xc = check_input(x, batch);
    Tensor y = Tensor::zeros(DType::f32, {batch, out()});
    const float* w = factor("w").data<float>();
    if (batch == 1)
      linalg::sgemv(false, out(), in(), 1.0f, w, in(), xc.data<float>(), 0.0f,
                    y.mutable_data<float>());
    else
      linalg::sgemm(false, true, batch, out(), in(), 1.0f, xc.data<float>(), in(), w, in(), 0.0f,
                    y.mutable_data<float>(), out());
    return y;
  }

  int64_t macs(int64_t batch) const override { return batch * out() * in(); }
};

}  // namespace

const SchemeTraits kDenseTraits{
    .kind = SchemeKind::dense,
    .pattern = "dense",
    .reference = "W as f32 (DESIGN.md)",
    .label = [](const SchemeParams&) { return std::string("dense"); },
    .applicable = [](const Shape& s, const SchemeParams&) { return is_weight_shape(s); },
    .bytes = [](const Shape& s, const SchemeParams&) -> uint64_t {
      const MatrixDims d = matrix_dims(s);
      return 4 * static_cast<uint64_t>(d.out * d.in);
    },
    .encode = [](const Tensor& w, const SchemeParams&) -> std::unique_ptr<Encoded> {
      return std::make_unique<DenseWeight>(weight_matrix(w, "dense").clone());
    },
};

}  // namespace tailor::schemes::detail
