// tucker's encoder with a mode-0 factor the caller already has (tailor
// profile's low-rank plan takes the same exact SVD of W first).
#pragma once

#include <memory>

#include "tailor/linalg/blas.h"
#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// The `tucker` candidate of W (conv kernel or matrix, as Scheme::encode takes
/// it), what encoding "tucker" with `params` gives, with factors cut from an
/// exact SVD U·diag(σ)·Vᵀ of W's [out, in] view that the caller already has
/// (linalg::svd_exact's, truncated): U0 [out, r0] from the first r0 columns of
/// `u` (r0 = ceil(fraction·out)) and, for a 1×1 conv kernel [out, cin, 1, 1]
/// (whose mode-1 unfolding is Wᵀ), U1 [cin, r1] from the first r1 rows of `vt`
/// [k, cin], transposed. Each is used only where tucker would itself take that
/// factor from svd_exact of the same unfolding (one under
/// svd.gram_min_elements, not thin, whose SVD svd_prefers_exact), so the
/// factors equal tucker's own up to the rounding of gesdd on W rather than on
/// Wᵀ (and the sign of each vector); elsewhere, when `u` or `vt` has too few
/// vectors or other sizes, or `vt` is empty, the factor is computed as usual.
/// Throws as Scheme::encode does.
std::unique_ptr<Encoded> encode_tucker_reusing(const Tensor& w, const SchemeParams& params,
                                               const linalg::Matrix& u, const linalg::Matrix& vt);

}  // namespace tailor::schemes
