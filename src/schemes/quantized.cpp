#include "quantized.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

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
  const int64_t in = this->in(), groups = (in + group_ - 1) / group_;
  Tensor w = Tensor::zeros(DType::f32, {out(), in});
  float* p = w.mutable_data<float>();
  // Group by group: one scale conversion per group; int8 codes read as bytes,
  // others through the bit stream.
  for (int64_t o = 0; o < out(); ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const float s = f16_to_f32(scales[o * groups + g]);
      const int64_t j0 = g * group_, j1 = std::min(in, j0 + group_);
      float* row = p + o * in;
      if (bits_ == 8) {
        const auto* c = reinterpret_cast<const int8_t*>(codes) + o * in;
        for (int64_t j = j0; j < j1; ++j) row[j] = static_cast<float>(c[j]) * s;
      } else if (bits_ == 4) {  // code i in the low (even i) or high nibble of byte i/2
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t i = o * in + j;
          const int32_t u = (codes[i >> 1] >> ((i & 1) * 4)) & 0xF;
          row[j] = static_cast<float>((u ^ 8) - 8) * s;
        }
      } else {
        for (int64_t j = j0; j < j1; ++j)
          row[j] = static_cast<float>(get_code(codes, q.nbytes(), o * in + j, bits_)) * s;
      }
    }
  return w;
}

Tensor QuantizedWeight::matmul(const Tensor& x) const {
  int64_t batch = 0;
  const Tensor xc = check_input(x, batch);
  Tensor y = Tensor::zeros(DType::f32, {batch, out()});
  matmul_into(xc.data<float>(), batch, y.mutable_data<float>());
  return y;
}

kernels::PackedGemmArgs QuantizedWeight::packed_args() const {
  const Tensor& q = factor("q");
  kernels::PackedGemmArgs a;
  a.codes = reinterpret_cast<const uint8_t*>(q.raw());
  a.code_bytes = q.nbytes();
  a.scales = factor("scale").data<uint16_t>();
  a.out = out();
  a.in = in();
  a.group = group_;
  return a;
}

void QuantizedWeight::matmul_into(const float* x, int64_t batch, float* y) const {
  kernels::PackedGemmArgs a = packed_args();
  a.x = x;
  a.batch = batch;
  a.y = y;
  const kernels::GemmKernels& k = kernels::best_gemm_kernels();
  (act8_ ? k.q8q8 : k.packed(bits_))(a);
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

namespace {

/// pack_quantized of codes of any integer type (|q| ≤ 127).
template <typename Code>
std::unique_ptr<Encoded> pack_codes(const std::vector<Code>& q, int64_t out, int64_t in,
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
  if (bits == 8) {
    std::transform(q.begin(), q.end(), reinterpret_cast<int8_t*>(stream),
                   [](Code c) { return static_cast<int8_t>(c); });
  } else if (bits == 4) {
    // Two codes a byte, the first in the low nibble (put_code's order).
    const int64_t n = out * in;
    for (int64_t i = 0; i + 1 < n; i += 2)
      stream[i / 2] =
          static_cast<uint8_t>((uint32_t(q[i]) & 0xF) | ((uint32_t(q[i + 1]) & 0xF) << 4));
    if (n % 2) stream[n / 2] = static_cast<uint8_t>(uint32_t(q[n - 1]) & 0xF);
  } else {
    for (int64_t i = 0; i < out * in; ++i)
      if (q[static_cast<size_t>(i)] != 0) put_code(stream, i, bits, q[static_cast<size_t>(i)]);
  }
  return std::make_unique<QuantizedWeight>(label, out, in, bits, group, std::move(codes),
                                           std::move(stored));
}

}  // namespace

std::unique_ptr<Encoded> pack_quantized(const std::vector<int32_t>& q, int64_t out, int64_t in,
                                        const std::string& label, int bits, int64_t group,
                                        const std::vector<float>& scales) {
  return pack_codes(q, out, in, label, bits, group, scales);
}

std::unique_ptr<Encoded> quantize_with_scales(const float* p, int64_t out, int64_t in,
                                              const std::string& label, int bits, int64_t group,
                                              const std::vector<float>& scales) {
  const int64_t g = group == 0 ? in : group;
  const int64_t groups = (in + g - 1) / g;
  const auto limit = static_cast<float>((1 << (bits - 1)) - 1);
  std::vector<int8_t> q(static_cast<size_t>(out * in));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < groups; ++k) {
      const float s = scales[static_cast<size_t>(o * groups + k)];
      const int64_t j0 = k * g, j1 = std::min(in, j0 + g);
      const float* row = p + o * in;
      int8_t* qr = q.data() + o * in;
      if (s == 0) {  // every |W| rounds below the smallest f16 step: q = 0
        std::fill(qr + j0, qr + j1, int8_t{0});
        continue;
      }
      int64_t j = j0;
#if defined(__AVX2__)
      // Eight at a time, the same arithmetic: round_half_away(x) is
      // copysign(floor(|x| + 0.5), x), then the clamp and the conversion.
      const __m256 vs = _mm256_set1_ps(s), half = _mm256_set1_ps(0.5f);
      const __m256 hi = _mm256_set1_ps(limit), lo = _mm256_set1_ps(-limit);
      const __m256 sign = _mm256_set1_ps(-0.0f);
      for (; j + 8 <= j1; j += 8) {
        const __m256 x = _mm256_div_ps(_mm256_loadu_ps(row + j), vs);
        __m256 r = _mm256_floor_ps(_mm256_add_ps(_mm256_andnot_ps(sign, x), half));
        r = _mm256_or_ps(r, _mm256_and_ps(sign, x));
        r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
        alignas(32) int32_t codes[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(codes), _mm256_cvttps_epi32(r));
        for (int k = 0; k < 8; ++k) qr[j + k] = static_cast<int8_t>(codes[k]);
      }
#endif
      for (; j < j1; ++j)
        qr[j] = static_cast<int8_t>(std::clamp(round_half_away(row[j] / s), -limit, limit));
    }
  return pack_codes(q, out, in, label, bits, group, scales);
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
