// LSTM (ONNX, layout 0, gates i o f c, activations σ/tanh/tanh): the input
// projections of all steps in one blocked gemm, then per step one gemm call
// with the recurrence weights and the gate update by the activation kernels
// (all from the registry).
#include "tailor/runtime/kernels/lstm.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/elementwise.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

int64_t lstm_scratch_size(const LstmParams& p) {
  const int64_t g = 4 * p.hidden_size;
  return p.seq_len * p.batch * g + p.batch * g + 2 * p.batch * p.hidden_size;
}

void lstm(const LstmParams& p, const float* x, const float* w, const float* r, const float* b,
          const float* initial_h, const float* initial_c, float* y, float* y_h, float* y_c,
          float* scratch) {
  check(p.seq_len >= 1 && p.batch >= 1 && p.input_size >= 1 && p.hidden_size >= 1, "",
        "LSTM sizes must be positive: seq_length " + std::to_string(p.seq_len) + ", batch " +
            std::to_string(p.batch) + ", input_size " + std::to_string(p.input_size) +
            ", hidden_size " + std::to_string(p.hidden_size));
  const int64_t hs = p.hidden_size, g4 = 4 * hs, nb = p.batch, dirs = p.num_directions();
  const KernelTable& kt = active_kernels();
  const F32GemmFn gemm_fn = kt.gemm;
  std::vector<float> owned;
  if (scratch == nullptr) {
    owned.resize(static_cast<size_t>(lstm_scratch_size(p)));
    scratch = owned.data();
  }
  float* xw = scratch;                      // [seq, batch, 4H]
  float* gates = xw + p.seq_len * nb * g4;  // [batch, 4H]
  float* h = gates + nb * g4;               // [batch, H]
  float* c = h + nb * hs;                   // [batch, H]
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = p.direction == LstmDirection::reverse || d == 1;
    const float* wd = w + d * g4 * p.input_size;
    const float* rd = r + d * g4 * hs;
    // xw = X·Wᵀ + Wb + Rb for every step.
    detail::gemm_blocked(gemm_fn, false, true, p.seq_len * nb, g4, p.input_size, 1.f, x,
                         p.input_size, wd, p.input_size, 0.f, xw, g4);
    if (b != nullptr) {
      const float* wb = b + d * 2 * g4;
      const float* rb = wb + g4;
      for (int64_t row = 0; row < p.seq_len * nb; ++row) {
        float* xr = xw + row * g4;
        for (int64_t j = 0; j < g4; ++j) xr[j] += wb[j] + rb[j];
      }
    }
    if (initial_h) {
      std::copy(initial_h + d * nb * hs, initial_h + (d + 1) * nb * hs, h);
    } else {
      std::fill(h, h + nb * hs, 0.f);
    }
    if (initial_c) {
      std::copy(initial_c + d * nb * hs, initial_c + (d + 1) * nb * hs, c);
    } else {
      std::fill(c, c + nb * hs, 0.f);
    }
    for (int64_t step = 0; step < p.seq_len; ++step) {
      const int64_t t = reverse ? p.seq_len - 1 - step : step;
      std::copy(xw + t * nb * g4, xw + (t + 1) * nb * g4, gates);
      gemm_fn(false, true, nb, g4, hs, 1.f, h, hs, rd, hs, 1.f, gates, g4);
      for (int64_t bi = 0; bi < nb; ++bi) {
        float* gt = gates + bi * g4;  // i, o, f, c blocks of H
        kt.bias_act(Activation::sigmoid(), 0.f, gt, gt, 3 * hs);
        kt.bias_act(Activation::tanh(), 0.f, gt + 3 * hs, gt + 3 * hs, hs);
        float* cb = c + bi * hs;
        float* hb = h + bi * hs;
        for (int64_t j = 0; j < hs; ++j) cb[j] = gt[2 * hs + j] * cb[j] + gt[j] * gt[3 * hs + j];
        kt.bias_act(Activation::tanh(), 0.f, cb, hb, hs);
        for (int64_t j = 0; j < hs; ++j) hb[j] *= gt[hs + j];
      }
      if (y) std::copy(h, h + nb * hs, y + ((t * dirs + d) * nb) * hs);
    }
    if (y_h) std::copy(h, h + nb * hs, y_h + d * nb * hs);
    if (y_c) std::copy(c, c + nb * hs, y_c + d * nb * hs);
  }
}

}  // namespace tailor::runtime::kernels
