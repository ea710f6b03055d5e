#include "tailor/schemes/scheme.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <span>

#include "common.h"
#include "quantized.h"
#include "tailor/core/error.h"
#include "tailor/schemes/matmul_into.h"

namespace tailor::schemes {

Encoded::Encoded(std::string label, int64_t out, int64_t in, std::vector<Factor> factors)
    : label_(std::move(label)), out_(out), in_(in), factors_(std::move(factors)) {}

const Tensor& Encoded::factor(std::string_view name) const {
  for (const Factor& f : factors_)
    if (f.name == name) return f.tensor;
  throw Error(label_, fmt::format("no stored factor named '{}'", name));
}

uint64_t Encoded::bytes() const {
  uint64_t total = 0;
  for (const Factor& f : factors_) total += f.tensor.nbytes();
  return total;
}

Tensor Encoded::check_input(const Tensor& x, int64_t& batch) const {
  // The message is formatted only on failure: matmul runs once per node and token.
  if (x.dtype() != DType::f32 || x.rank() != 2 || x.dim(1) != in_)
    throw Error(label_, fmt::format("matmul expects X f32 [batch, {}], found {} {}", in_,
                                    dtype_name(x.dtype()), shape_to_string(x.shape())));
  batch = x.dim(0);
  return x.contiguous();
}

void matmul_into(const Encoded& e, const float* x, int64_t batch, float* y) {
  if (const auto* q = dynamic_cast<const detail::QuantizedWeight*>(&e)) {
    q->matmul_into(x, batch, y);
    return;
  }
  const Tensor y2 =
      e.matmul(Tensor::from_f32({batch, e.in()},
                                std::span<const float>(x, static_cast<size_t>(batch * e.in()))))
          .contiguous();
  std::memcpy(y, y2.raw(), static_cast<size_t>(batch * e.out()) * sizeof(float));
}

std::optional<PackedView> packed_view(const Encoded& e) {
  const auto* q = dynamic_cast<const detail::QuantizedWeight*>(&e);
  if (q == nullptr || q->act8()) return std::nullopt;
  return PackedView{q->packed_args(), q->bits()};
}

std::optional<PackedView> int8_weight_only_view(const Encoded& e) {
  auto p = packed_view(e);
  if (!p || p->bits != 8 || p->args.group < p->args.in) return std::nullopt;
  return p;
}

std::optional<PackedView> w8a8_view(const Encoded& e) {
  const auto* q = dynamic_cast<const detail::QuantizedWeight*>(&e);
  if (q == nullptr || !q->act8()) return std::nullopt;
  return PackedView{q->packed_args(), q->bits()};
}

std::unique_ptr<Encoded> Scheme::encode(const Tensor& w) const {
  check(applicable(w.shape()), label(),
        fmt::format("does not apply to a weight of shape {}", shape_to_string(w.shape())));
  return traits_->encode(w, params_);
}

double rel_error(const Tensor& w, const Encoded& e) {
  const detail::MatrixDims d = detail::matrix_dims(w.shape());
  check(d.out == e.out() && d.in == e.in(), e.label(),
        fmt::format("rel_error: weight {} does not match the encoded [{}, {}]",
                    shape_to_string(w.shape()), e.out(), e.in()));
  const std::vector<float> a = w.to_f32_vector();
  const std::vector<float> b = e.decode().to_f32_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = static_cast<double>(a[i]) - b[i];
    num += diff * diff;
    den += static_cast<double>(a[i]) * a[i];
  }
  return den == 0 ? 0.0 : std::sqrt(num / den);
}

}  // namespace tailor::schemes
