// The traits object of every scheme, each defined in its own file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes::detail {

extern const SchemeTraits kDenseTraits;         // dense.cpp
extern const SchemeTraits kInt8Traits;          // int8.cpp
extern const SchemeTraits kInt8A8Traits;        // int8.cpp
extern const SchemeTraits kInt4Traits;          // int4.cpp
extern const SchemeTraits kInt3Traits;          // int3.cpp
extern const SchemeTraits kInt4GroupedTraits;   // int4_grouped.cpp
extern const SchemeTraits kTernaryTraits;       // ternary.cpp
extern const SchemeTraits kSparse24Traits;      // sparse_2_4.cpp
extern const SchemeTraits kLowRankTraits;       // lowrank.cpp
extern const SchemeTraits kMonarchTraits;       // monarch.cpp
extern const SchemeTraits kTuckerTraits;        // tucker.cpp
extern const SchemeTraits kTtTraits;            // tt.cpp
extern const SchemeTraits kQuantMseTraits;      // quant_mse.cpp
extern const SchemeTraits kQuantGptqTraits;     // quant_gptq.cpp
extern const SchemeTraits kLowRankQuantTraits;  // composite.cpp
extern const SchemeTraits kQuantLowRankTraits;  // composite.cpp
extern const SchemeTraits kQ8_0Traits;          // ggml_blocks.cpp
extern const SchemeTraits kQ4_0Traits;          // ggml_blocks.cpp

// Encoded weights from stored factors whose dtypes and shapes the caller
// (from_factors.cpp: encoded_from_factors) has checked; each in its scheme's file.
std::unique_ptr<Encoded> sparse24_from_factors(int64_t out, int64_t in, Tensor values,
                                               Tensor indices);
std::unique_ptr<Encoded> lowrank_from_factors(std::string label, Tensor a, Tensor b);
std::unique_ptr<Encoded> monarch_from_factors(int64_t m, Tensor l, Tensor r);
/// Cores "G1" … "Gd" f32 [r_{k−1}, o_k, i_k, r_k] with r_0 = r_d = 1 and matching bonds.
std::unique_ptr<Encoded> tt_from_factors(std::vector<Factor> cores);
/// "core" [r0, r1, r2], "U0" [d0, r0], "U1" [d1, r1] and optionally "U2" [d2, r2].
std::unique_ptr<Encoded> tucker_from_factors(std::vector<Factor> factors);

}  // namespace tailor::schemes::detail
