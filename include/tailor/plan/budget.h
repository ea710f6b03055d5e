// Budgets as the user writes them (`--budget`), resolved to bytes against a
// profile (DESIGN.md, "Planning").
#pragma once

#include <cstdint>
#include <string>

#include "tailor/profile/model_profile.h"

namespace tailor::plan {

/// A parsed `--budget` value.
struct Budget {
  enum class Kind {
    /// `25%`: percent of the model's dense f32 bytes (ModelProfile::dense_bytes).
    percent,
    /// `4.5bpw`: bits per weight over the planned layers, scales and every
    /// other stored byte included; the fixed bytes come on top.
    bits_per_weight,
    /// `300MB` (10^6), `1.5GiB` (2^30), `123456` or `123456B`: bytes.
    bytes,
  };
  Kind kind = Kind::bytes;
  /// The number as written (percent, bits per weight), or bytes for Kind::bytes.
  double value = 0;
  /// The text it was parsed from.
  std::string text;
};

/// Parses `25%`, `4.5bpw`, a byte count with an optional unit (B; kB, MB, GB,
/// TB = 10^3…10^12; KiB, MiB, GiB, TiB = 2^10…2^40; units case-insensitive).
/// The number must be finite and > 0. Throws Error (source "--budget") naming
/// the text and the accepted forms otherwise.
Budget parse_budget(const std::string& text);

/// Total bytes the budget allows for the whole model (planned layers plus fixed
/// bytes), rounded down:
/// - percent: value/100 · profile.dense_bytes;
/// - bits per weight: profile.fixed_bytes + value · Σ_layers numel / 8;
/// - bytes: value.
/// Throws Error (source "--budget") when the result does not fit in int64.
int64_t budget_bytes(const Budget& budget, const ModelProfile& profile);

}  // namespace tailor::plan
