// tucker's encoder with a mode-0 factor the caller already has (tailor
// profile's low-rank plan takes the same exact SVD of W first).
#pragma once

#include <memory>

#include "tailor/linalg/blas.h"
#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// The `tucker` candidate of W (conv kernel or matrix, as Scheme::encode takes
/// it), bit for bit what encoding "tucker" with `params` gives, with its
/// mode-0 factor U0 [out, r0] cut from `u`: the leading left singular vectors
/// of W's [out, in] view as linalg::svd_exact returns them (at least r0
/// columns, r0 = ceil(fraction·out)). `u` is used only where tucker would
/// itself take U0 from svd_exact of that same view (a layer under
/// svd.gram_min_elements whose mode-0 SVD svd_prefers_exact); elsewhere, or
/// when `u` has too few columns or other rows, U0 is computed as usual.
/// Throws as Scheme::encode does.
std::unique_ptr<Encoded> encode_tucker_reusing(const Tensor& w, const SchemeParams& params,
                                               const linalg::Matrix& u);

}  // namespace tailor::schemes
