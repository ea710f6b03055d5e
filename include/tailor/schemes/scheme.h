// The compression-scheme interface: a scheme encodes a weight W [out, in] into
// stored factors, decodes them, multiplies by them without decoding, and
// counts their bytes and multiply-accumulates (DESIGN.md, "Scheme semantics").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/linalg/svd.h"

namespace tailor::schemes {

/// The Gram matrix H = XᵀX [in, in] of a layer's calibration inputs X
/// [rows, in] (one row per token, or per im2col patch of a conv: the columns
/// in the order of the weight's [out, in] view), accumulated in double,
/// row-major. GPTQ's Hessian of the layer's output error (Frantar et al., 2022).
struct Gram {
  /// Columns of X (the weight's `in`).
  int64_t in = 0;
  /// Rows of X summed into h.
  int64_t rows = 0;
  /// H, in·in elements, row-major, symmetric.
  std::vector<double> h;
};

/// Parameters of a scheme: those its label fixes (group, rank) and encoder
/// options that labels leave at their defaults (documented per field).
struct SchemeParams {
  /// int4-g{G}: inputs (elements along `in`) per f16 scale; 32, 64 or 128.
  int64_t group = 0;
  /// lowrank-r{R}: the rank R (elements of the shared dimension).
  int64_t rank = 0;
  /// tucker: each factored mode of size d keeps r = ceil(fraction·d) components
  /// (at least 1, at most d); 1.0 is full rank (exact reconstruction).
  double tucker_rank_fraction = 0.25;
  /// tt: cores (modes) per side: out and in are each split into this many
  /// balanced factors.
  int tt_cores = 3;
  /// tt: cap on every bond rank r_k; 0 means no cap (full TT ranks, exact).
  int64_t tt_max_rank = 64;
  /// Options of the truncated SVD (seed, oversampling, power iterations).
  linalg::SvdOptions svd;
  /// Data-aware quantizers (`*-mse`, `*-gptq`): bits per code (8, 4 or 3);
  /// their group is `group` (0: one scale per output channel).
  int bits = 0;
  /// Composites: rank of the low-rank factors (`lowrank-r{R}-int8`,
  /// `int4+r{R}`) is `rank`; bits of their stored factors (8 or 4; 16: f16).
  int factor_bits = 0;
  /// `*-gptq`: the layer's calibration Gram XᵀX (in = the weight's in); the
  /// label does not apply without one.
  std::shared_ptr<const Gram> gram;
  /// `*-gptq`: quantize columns in order of decreasing H_jj (act-order).
  bool act_order = false;
  /// `*-gptq`: dampening λ = damp·mean(diag H) added to diag H (1 when H is 0).
  double damp = 0.01;
  /// `*-gptq`: columns per lazy batch update.
  int64_t gptq_block = 128;
};

/// One stored factor: the tensor written as `<layer>.<name>` (DESIGN.md,
/// "Files written"), e.g. "q" (codes), "scale" (f16 scales), "A", "B".
struct Factor {
  std::string name;
  Tensor tensor;
};

/// A weight W [out, in] in a scheme's stored form.
class Encoded {
 public:
  virtual ~Encoded() = default;

  /// The scheme's label, e.g. "int4-g64", "lowrank-r32".
  const std::string& label() const { return label_; }
  /// Output channels (rows of W).
  int64_t out() const { return out_; }
  /// Inputs (columns of W, the reduction axis; for a conv kernel in/groups·kh·kw).
  int64_t in() const { return in_; }
  /// The stored factors, in the order they are written.
  const std::vector<Factor>& factors() const { return factors_; }
  /// The factor named `name`; throws tailor::Error naming the label when absent.
  const Tensor& factor(std::string_view name) const;
  /// Storage in bytes: the sum of the factors' nbytes, every scale, index and
  /// metadata byte included.
  uint64_t bytes() const;
  /// Ŵ [out, in] f32 from the stored factors (to measure error; never used to run).
  virtual Tensor decode() const = 0;
  /// Y [batch, out] = X·Ŵᵀ for X [batch, in] f32, computed from the stored
  /// factors without forming Ŵ. Throws tailor::Error when X is not an f32
  /// matrix with `in` columns.
  virtual Tensor matmul(const Tensor& x) const = 0;
  /// Multiply-accumulates of matmul for `batch` rows of X.
  virtual int64_t macs(int64_t batch) const = 0;

 protected:
  Encoded(std::string label, int64_t out, int64_t in, std::vector<Factor> factors);
  /// Validates X for matmul and returns it contiguous; sets `batch`.
  Tensor check_input(const Tensor& x, int64_t& batch) const;

 private:
  std::string label_;
  int64_t out_ = 0;
  int64_t in_ = 0;
  std::vector<Factor> factors_;
};

/// Which member of the catalog a scheme is.
enum class SchemeKind {
  dense,
  int8,
  int8_a8,
  int4,
  int3,
  int4_grouped,
  ternary,
  sparse_2_4,
  lowrank,
  monarch,
  tucker,
  tt,
  quant_mse,
  quant_gptq,
  lowrank_quant,
  quant_lowrank,
  q8_0,
  q4_0,
};

/// The one place a scheme is described (ggml-style traits): label, byte
/// formula, applicability and reference encoder. Shapes are weight shapes:
/// [out, in], or a conv kernel [out, in/groups, kh, kw] viewed as [out, in/groups·kh·kw].
struct SchemeTraits {
  SchemeKind kind;
  /// Label, or its pattern for parameterised schemes: "int4-g{G}", "lowrank-r{R}".
  std::string_view pattern;
  /// The paper or definition the encoder follows.
  std::string_view reference;
  /// Label for `params` (e.g. "int4-g64").
  std::string (*label)(const SchemeParams& params);
  /// Whether the scheme can encode a weight of `shape` with `params`.
  bool (*applicable)(const Shape& shape, const SchemeParams& params);
  /// Stored bytes by DESIGN.md's formula, from the shape alone.
  uint64_t (*bytes)(const Shape& shape, const SchemeParams& params);
  /// Reference encoder of W (f32, f16 or bf16; shape as above). Throws
  /// tailor::Error naming the label when the shape does not apply or W holds
  /// non-finite values.
  std::unique_ptr<Encoded> (*encode)(const Tensor& w, const SchemeParams& params);
};

/// A scheme with its parameters: what a label names.
class Scheme {
 public:
  Scheme(const SchemeTraits& traits, SchemeParams params)
      : traits_(&traits), params_(std::move(params)) {}

  const SchemeTraits& traits() const { return *traits_; }
  const SchemeParams& params() const { return params_; }
  SchemeKind kind() const { return traits_->kind; }
  std::string label() const { return traits_->label(params_); }
  bool applicable(const Shape& shape) const { return traits_->applicable(shape, params_); }
  /// DESIGN.md's byte formula for a weight of `shape` (bytes).
  uint64_t predicted_bytes(const Shape& shape) const { return traits_->bytes(shape, params_); }
  /// Encodes W; see SchemeTraits::encode.
  std::unique_ptr<Encoded> encode(const Tensor& w) const;

 private:
  const SchemeTraits* traits_;
  SchemeParams params_;
};

/// rel_error = ‖W − Ŵ‖_F / ‖W‖_F (0 when ‖W‖ = 0), in double, of Ŵ = e.decode()
/// against W viewed [out, in]. Throws tailor::Error when the shapes differ.
double rel_error(const Tensor& w, const Encoded& e);

}  // namespace tailor::schemes
