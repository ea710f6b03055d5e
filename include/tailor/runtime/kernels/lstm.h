// LSTM (ONNX operator, opsets 7–22, layout 0): forward, reverse or
// bidirectional, gates in ONNX order i, o, f, c, default activations
// f = Sigmoid, g = h = Tanh, no peepholes, no clip, no input_forget coupling,
// all sequences full length (sequence_lens absent).
#pragma once

#include <cstdint>

namespace tailor::runtime::kernels {

enum class LstmDirection : uint8_t { forward, reverse, bidirectional };

/// num_directions = 2 for bidirectional, else 1 (written D below).
struct LstmParams {
  int64_t seq_len = 0, batch = 0, input_size = 0, hidden_size = 0;
  LstmDirection direction = LstmDirection::forward;

  int64_t num_directions() const { return direction == LstmDirection::bidirectional ? 2 : 1; }
};

/// Floats of scratch lstm needs: seq_len·batch·4H + batch·4H + 2·batch·H.
int64_t lstm_scratch_size(const LstmParams& p);

/// it = σ(Xt·Wiᵀ + Ht−1·Riᵀ + Wbi + Rbi), ft, ot likewise, ct = tanh(...),
/// Ct = ft⊙Ct−1 + it⊙ct, Ht = ot⊙tanh(Ct).
/// x [seq_len, batch, input_size]; w [D, 4H, input_size]; r [D, 4H, H];
/// b [D, 8H] (Wb then Rb) or null; initial_h, initial_c [D, batch, H] or null
/// (zeros). Outputs, each may be null: y [seq_len, D, batch, H],
/// y_h [D, batch, H], y_c [D, batch, H]. The reverse direction reads the
/// sequence from its end. Throws tailor::Error on non-positive sizes.
void lstm(const LstmParams& p, const float* x, const float* w, const float* r, const float* b,
          const float* initial_h, const float* initial_c, float* y, float* y_h, float* y_c,
          float* scratch = nullptr);

}  // namespace tailor::runtime::kernels
