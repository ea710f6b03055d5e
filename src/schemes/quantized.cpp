#include "quantized.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common.h"
#include "packing.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::detail {

QuantizedWeight::QuantizedWeight(std::string label, int64_t out, int64_t in, int bits,
                                 int64_t group, Tensor codes, Tensor scales, bool act8)
    : Encoded(std::move(label), out, in, {{"q", std::move(codes)}, {"scale", std::move(scales)}}),
      bits_(bits),
      group_(group),
      act8_(act8) {
  check(!act8 || (bits == 8 && group >= in), this->label(),
        "activation quantization needs per-channel int8 codes");
}

Tensor QuantizedWeight::decode() const {
  const Tensor& q = factor("q");
  const auto* codes = reinterpret_cast<const uint8_t*>(q.raw());
  const uint16_t* scales = factor("scale").data<uint16_t>();
  const int64_t groups = (in() + group_ - 1) / group_;
  Tensor w = Tensor::zeros(DType::f32, {out(), in()});
  float* p = w.mutable_data<float>();
  for (int64_t o = 0; o < out(); ++o)
    for (int64_t j = 0; j < in(); ++j) {
      const float s = f16_to_f32(scales[o * groups + j / group_]);
      p[o * in() + j] = static_cast<float>(get_code(codes, q.nbytes(), o * in() + j, bits_)) * s;
    }
  return w;
}

Tensor QuantizedWeight::matmul(const Tensor& x) const {
  int64_t batch = 0;
  const Tensor xc = check_input(x, batch);
  Tensor y = Tensor::zeros(DType::f32, {batch, out()});
  const Tensor& q = factor("q");
  kernels::PackedGemmArgs a;
  a.codes = reinterpret_cast<const uint8_t*>(q.raw());
  a.code_bytes = q.nbytes();
  a.scales = factor("scale").data<uint16_t>();
  a.out = out();
  a.in = in();
  a.group = group_;
  a.x = xc.data<float>();
  a.batch = batch;
  a.y = y.mutable_data<float>();
  const kernels::GemmKernels& k = kernels::best_gemm_kernels();
  (act8_ ? k.q8q8 : k.packed(bits_))(a);
  return y;
}

std::vector<float> absmax_scales(const float* p, int64_t out, int64_t in, int bits, int64_t group,
                                 const std::string& label) {
  if (group == 0) group = in;
  const int64_t groups = (in + group - 1) / group;
  const auto limit = static_cast<float>((1 << (bits - 1)) - 1);
  std::vector<float> scales(static_cast<size_t>(out * groups));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j0 = g * group, j1 = std::min(in, j0 + group);
      float max_abs = 0;
      for (int64_t j = j0; j < j1; ++j) max_abs = std::max(max_abs, std::abs(p[o * in + j]));
      const float s = max_abs == 0 ? 1.0f : round_to_f16(max_abs / limit);
      if (!std::isfinite(s))
        throw Error(label, fmt::format("row {}: scale max|W|/{} = {} overflows f16", o, limit,
                                       max_abs / limit));
      scales[static_cast<size_t>(o * groups + g)] = s;
    }
  return scales;
}

std::unique_ptr<Encoded> pack_quantized(const std::vector<int32_t>& q, int64_t out, int64_t in,
                                        const std::string& label, int bits, int64_t group,
                                        const std::vector<float>& scales) {
  const bool per_channel = group == 0;
  if (per_channel) group = in;
  const int64_t groups = (in + group - 1) / group;
  Tensor codes =
      bits == 8 ? Tensor::zeros(DType::i8, {out, in})
                : Tensor::zeros(DType::u8, {static_cast<int64_t>(packed_bytes(out * in, bits))});
  Tensor stored =
      per_channel ? Tensor::zeros(DType::f16, {out}) : Tensor::zeros(DType::f16, {out, groups});
  auto* stream = reinterpret_cast<uint8_t*>(codes.mutable_raw());
  uint16_t* s16 = stored.mutable_data<uint16_t>();
  for (int64_t i = 0; i < out * groups; ++i) s16[i] = f32_to_f16(scales[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < out * in; ++i)
    if (q[static_cast<size_t>(i)] != 0) put_code(stream, i, bits, q[static_cast<size_t>(i)]);
  return std::make_unique<QuantizedWeight>(label, out, in, bits, group, std::move(codes),
                                           std::move(stored));
}

std::unique_ptr<Encoded> quantize_with_scales(const float* p, int64_t out, int64_t in,
                                              const std::string& label, int bits, int64_t group,
                                              const std::vector<float>& scales) {
  const int64_t g = group == 0 ? in : group;
  const int64_t groups = (in + g - 1) / g;
  const auto limit = static_cast<float>((1 << (bits - 1)) - 1);
  std::vector<int32_t> q(static_cast<size_t>(out * in), 0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) {
      const float s = scales[static_cast<size_t>(o * groups + j / g)];
      if (s == 0) continue;  // every |W| rounds below the smallest f16 step: q = 0
      q[static_cast<size_t>(o * in + j)] =
          static_cast<int32_t>(std::clamp(round_half_away(p[o * in + j] / s), -limit, limit));
    }
  return pack_quantized(q, out, in, label, bits, group, scales);
}

std::unique_ptr<Encoded> quantize_symmetric(const Tensor& w, const std::string& label, int bits,
                                            int64_t group, bool act8) {
  const Tensor m = weight_matrix(w, label);
  const int64_t out = m.dim(0), in = m.dim(1);
  const float* p = m.data<float>();
  const std::vector<float> scales = absmax_scales(p, out, in, bits, group, label);
  std::unique_ptr<Encoded> e = quantize_with_scales(p, out, in, label, bits, group, scales);
  if (!act8) return e;
  // int8-a8: the same codes and scales, multiplied with activations quantized per row.
  return std::make_unique<QuantizedWeight>(label, out, in, bits, group == 0 ? in : group,
                                           Tensor(e->factor("q")), Tensor(e->factor("scale")),
                                           true);
}

uint64_t quantized_bytes(const Shape& shape, int bits, int64_t group) {
  const MatrixDims d = matrix_dims(shape);
  const int64_t g = group == 0 ? d.in : group;
  const auto scales = static_cast<uint64_t>(d.out * ((d.in + g - 1) / g));
  return packed_bytes(d.out * d.in, bits) + 2 * scales;
}

}  // namespace tailor::schemes::detail
