// The runtime's one rule for sharing an operator's loop over parallel_for's threads
// (runtime/kernels/gemm_partition.h: worth_threads, worth_threads_elements):
// its thresholds by their definition, and the same values at 1 and 2 threads
// for ops on both sides of the threshold (the partitions do not depend on it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime::kernels {
namespace {

using detail::kElementMacs;
using detail::kParallelMinMacs;
using detail::worth_threads;
using detail::worth_threads_elements;

TEST(ThreadRule, ThresholdsFollowTheirDefinition) {
  // 2^18 multiply-adds; an element counts for one, so 2^18 elements.
  EXPECT_EQ(kParallelMinMacs, 262144);
  EXPECT_EQ(kElementMacs, 1);
  EXPECT_FALSE(worth_threads(262143));
  EXPECT_TRUE(worth_threads(262144));
  EXPECT_FALSE(worth_threads_elements(262143));
  EXPECT_TRUE(worth_threads_elements(262144));
  // Three operations per element: ⌈2^18 / 3⌉ = 87382 elements.
  EXPECT_FALSE(worth_threads_elements(87381, 3));
  EXPECT_TRUE(worth_threads_elements(87382, 3));
  // Fewer than one operation counts as one.
  EXPECT_EQ(worth_threads_elements(262144, 0), worth_threads_elements(262144, 1));
  EXPECT_FALSE(worth_threads_elements(0));
}

std::vector<float> values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(-8.0, 8.0));
  return v;
}

/// `f` run under ThreadLimit(threads).
template <class F>
std::vector<float> at_threads(int threads, F f) {
  linalg::ThreadLimit limit(threads);
  return f();
}

TEST(ThreadRule, SameValuesAtOneAndTwoThreadsOnBothSidesOfTheThreshold) {
  Activation act = Activation::hard_swish();
  act.pre_scale = 1.38f, act.pre_shift = 0.586f, act.post_scale = 0.168f, act.post_shift = -0.2f;
  for (const int64_t n : {int64_t{65536}, int64_t{262143}, int64_t{262144 + 4097}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const std::vector<float> x = values(n, 3 + static_cast<uint64_t>(n));
    auto activation = [&] {
      std::vector<float> y(x.size());
      apply_activation(act, x.data(), y.data(), n);
      return y;
    };
    // As channels of an epilogue: 64 channels of n/64 values.
    const int64_t ch = 64, sp = n / ch;
    const std::vector<float> bias = values(ch, 5);
    auto epilogue = [&] {
      std::vector<float> y(static_cast<size_t>(ch * sp));
      bias_activation(act, bias.data(), ch, sp, x.data(), y.data());
      return y;
    };
    auto soft = [&] {
      std::vector<float> y(x.size());
      softmax(x.data(), y.data(), n / 64, 64, 1);
      return y;
    };
    const std::vector<float> a1 = at_threads(1, activation), a2 = at_threads(2, activation);
    const std::vector<float> e1 = at_threads(1, epilogue), e2 = at_threads(2, epilogue);
    const std::vector<float> s1 = at_threads(1, soft), s2 = at_threads(2, soft);
    EXPECT_EQ(0, std::memcmp(a1.data(), a2.data(), a1.size() * 4));
    EXPECT_EQ(0, std::memcmp(e1.data(), e2.data(), e1.size() * 4));
    EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), s1.size() * 4));
    // And the activation is the one asked for (spot check by its formula:
    // v = x·s0 + t0, y = v·clamp(v/6 + 1/2, 0, 1)·s1 + t1).
    for (size_t i = 0; i < x.size(); i += 9973) {
      const float v = x[i] * act.pre_scale + act.pre_shift;
      const float h = v * std::min(std::max(v * (1.f / 6.f) + 0.5f, 0.f), 1.f);
      EXPECT_NEAR(a1[i], h * act.post_scale + act.post_shift, 1e-5f) << i;
    }
  }
}

}  // namespace
}  // namespace tailor::runtime::kernels
