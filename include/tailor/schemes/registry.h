// The catalog of compression schemes: every scheme's traits, label parsing, and
// which schemes apply to a weight shape.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// The traits of every scheme, in catalog order: dense, int8, int8-a8, int4, int3,
/// int4-g{G}, ternary, sparse-2:4, lowrank-r{R}, monarch, tucker, tt, the
/// data-aware and composite families, and ggml's block formats q8_0, q4_0.
std::span<const SchemeTraits* const> all_schemes();

/// The traits of `kind`.
const SchemeTraits& scheme_traits(SchemeKind kind);

/// Parses a label: "dense", "int8", "int8-a8", "int4", "int3", "int4-g32", "int4-g64",
/// "int4-g128", "ternary", "sparse-2:4", "lowrank-r{R}" (R ≥ 1, decimal),
/// "monarch", "tucker", "tt", and the data-aware quantizers "<q>-mse" and
/// "<q>-gptq" for q one of int8, int4, int3, int4-g{32,64,128}, and ggml's
/// block formats "q8_0", "q4_0" (schemes/ggml_blocks.h). Other
/// parameters take `defaults`' values.
/// Throws tailor::Error naming the label and listing the known ones.
Scheme parse_scheme(std::string_view label, const SchemeParams& defaults = {});

/// Low-rank ranks tried by default for a weight [out, in] (viewed as a
/// matrix): 8, 16, 32, … while R·(out + in) < out·in (fewer bytes than dense).
std::vector<int64_t> default_ranks(const Shape& shape);

/// The reference label whose stored form (factors, layout, kernels, ONNX
/// export) `label` shares: "int4-g64" for "int4-g64-mse" or "int4-g64-gptq",
/// "int8" for "int8-a8" (whose activation rounding is a tailor kernel choice a
/// standard file does not carry); `label` itself for every other label.
std::string stored_form(std::string_view label);

/// Every catalog entry for a weight of `shape` (int4-g32/64/128, and
/// lowrank-r{R} for each R of `ranks`, the -mse and -gptq forms of int8,
/// int4, int3 and int4-g{G}), filtered by applicability (a -gptq label applies
/// only when defaults.gram holds the layer's Gram).
std::vector<Scheme> applicable_schemes(const Shape& shape, std::span<const int64_t> ranks,
                                       const SchemeParams& defaults = {});

/// lowrank-r{rank} from an SVD of W [out, in] already computed (e.g. one
/// truncated SVD shared by several ranks): A [out, rank] = U_R·diag(σ_R),
/// B [rank, in] = V_Rᵀ from its leading `rank` triplets, as the lowrank
/// encoder stores them. Throws tailor::Error unless 1 ≤ rank ≤ svd.s.size().
std::unique_ptr<Encoded> lowrank_from_svd(const linalg::Svd& svd, int64_t rank);

/// The same from a one-sided SVD of `w` [out, in] (f32, contiguous), as
/// linalg::svd_gram or BlockedQb::svd form it: with only U, B = V_Rᵀ =
/// diag(1/σ_R)·U_Rᵀ·W; with only Vᵀ, A = W·V_R (= U_R·diag(σ_R)); with both,
/// as above. A·B is then W projected onto the leading R singular vectors (a
/// direction with σ = 0 contributes 0). Memory: the factors only. Throws
/// tailor::Error unless 1 ≤ rank ≤ svd.s.size() and the shapes agree.
std::unique_ptr<Encoded> lowrank_from_svd(const linalg::Svd& svd, int64_t rank, const Tensor& w);

/// The Encoded weight [out, in] of `label` holding `factors` as stored (the
/// tensors Encoded::factors() lists, e.g. read back from a file): same names,
/// dtypes and shapes, storage shared, nothing re-encoded. Quantized labels take
/// "q" (int8: i8 [out, in]; fewer bits: u8 [ceil(out·in·bits/8)]) and "scale"
/// (f16 [out], int4-g{G}: [out, ceil(in/G)]); sparse-2:4 "values" f32
/// [out, kept] and "indices" u8; lowrank-r{R} "A" [out, R], "B" [R, in];
/// monarch "L", "R" [m, m, m] (out = in = m²); tt "G1" … "Gd" [r, o_k, i_k, r'];
/// tucker "core", "U0", "U1" (, "U2"). Throws tailor::Error naming the label
/// when a factor is missing or its dtype or shape disagrees with out, in and
/// the label.
std::unique_ptr<Encoded> encoded_from_factors(std::string_view label, int64_t out, int64_t in,
                                              std::vector<Factor> factors);

}  // namespace tailor::schemes
