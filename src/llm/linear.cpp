// Dense and compressed Linear layers of the llama forward pass.
#include <cstring>

#include "tailor/core/error.h"
#include "tailor/linalg/blas.h"
#include "tailor/llm/llama.h"

namespace tailor::llm {

DenseLinear::DenseLinear(Tensor w) : w_(std::move(w)) {
  check(
      w_.defined() && w_.dtype() == DType::f32 && w_.rank() == 2 && w_.is_contiguous() &&
          w_.is_aligned(),
      "",
      "dense linear weight must be a contiguous f32 matrix, found " + shape_to_string(w_.shape()));
}

void DenseLinear::forward(const float* x, int64_t batch, float* y) const {
  const int64_t n_out = out(), n_in = in();
  const float* w = w_.data<float>();
  if (batch == 1) {
    linalg::sgemv(false, n_out, n_in, 1.0f, w, n_in, x, 0.0f, y);
  } else {
    // Y [batch, out] = X [batch, in] · Wᵀ (W stored [out, in]).
    linalg::sgemm(false, true, batch, n_out, n_in, 1.0f, x, n_in, w, n_in, 0.0f, y, n_out);
  }
}

EncodedLinear::EncodedLinear(std::shared_ptr<const schemes::Encoded> encoded)
    : e_(std::move(encoded)) {
  check(e_ != nullptr, "", "encoded linear needs an encoded weight");
}

void EncodedLinear::forward(const float* x, int64_t batch, float* y) const {
  // The matmul takes a tensor; wrap the activations in an owned copy (small:
  // [batch, in]) so the Encoded interface stays the only entry point.
  Tensor xt = Tensor::from_f32({batch, e_->in()}, {x, static_cast<size_t>(batch * e_->in())});
  const Tensor yt = e_->matmul(xt).contiguous();
  std::memcpy(y, yt.data<float>(), sizeof(float) * static_cast<size_t>(batch * e_->out()));
}

}  // namespace tailor::llm
