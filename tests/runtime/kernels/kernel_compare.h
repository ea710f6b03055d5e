// Helpers of the kernel-versus-reference tests: seeded inputs, a fixture that
// skips where the optimised table is not available, and an element-wise
// comparison with a per-element tolerance (NaN must meet NaN).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/core/rng.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels::testing {

/// int8 codes over the whole range (−128 included) and f16 scales in
/// [1e-3, 2e-2) of an [out, in] weight, seeded, with their packed-GEMM view
/// (per-channel scales) for the W8A8 kernels' pack functions.
struct Weights {
  std::vector<int8_t> codes;
  std::vector<uint16_t> scales;
  schemes::kernels::PackedGemmArgs args;
};

inline Weights weights(int64_t out, int64_t in, uint64_t seed) {
  Weights w;
  Rng rng(seed);
  w.codes.resize(static_cast<size_t>(out * in));
  for (int8_t& c : w.codes) c = static_cast<int8_t>(static_cast<int>(rng.uniform(0, 256)) - 128);
  for (int64_t o = 0; o < out; ++o)
    w.scales.push_back(f32_to_f16(static_cast<float>(rng.uniform(1e-3, 2e-2))));
  w.args.codes = reinterpret_cast<const uint8_t*>(w.codes.data());
  w.args.code_bytes = w.codes.size();
  w.args.scales = w.scales.data();
  w.args.out = out;
  w.args.in = in;
  w.args.group = in;
  return w;
}

/// Unit roundoff of f32: 2^−24.
inline constexpr double kEps = 0x1p-24;

/// n values uniform in [lo, hi) from `seed`.
inline std::vector<float> uniform(int64_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

/// Expects got[i] == want[i] (infinities included), both NaN, or
/// |got[i] − want[i]| ≤ tol[i], for every i.
inline void expect_within(const std::vector<float>& got, const std::vector<float>& want,
                          const std::vector<double>& tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(tol.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i] || (std::isnan(want[i]) && std::isnan(got[i]))) continue;
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol[i])) {
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << ", reference " << want[i]
                    << " (tolerance " << tol[i] << ")";
      if (++reported == 5) return;
    }
  }
}

/// Expects got == want bit for bit up to NaN payloads (both NaN counts as equal).
inline void expect_same(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  expect_within(got, want, std::vector<double>(want.size(), 0.0), what);
}

/// Fixture of the comparisons: the reference table and the AVX2 one, the
/// test skipped where the AVX2 kernels are not built in or the CPU lacks them.
class KernelVsRef : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_available(Isa::avx2)) GTEST_SKIP() << "AVX2/FMA runtime kernels not available here";
  }
  const KernelTable& ref() const { return kernel_table(Isa::ref); }
  const KernelTable& opt() const { return kernel_table(Isa::avx2); }
};

}  // namespace tailor::runtime::kernels::testing
