// The traits object of every scheme, each defined in its own file.
#pragma once

#include "tailor/schemes/scheme.h"

namespace tailor::schemes::detail {

extern const SchemeTraits kDenseTraits;         // dense.cpp
extern const SchemeTraits kInt8Traits;          // int8.cpp
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

}  // namespace tailor::schemes::detail
