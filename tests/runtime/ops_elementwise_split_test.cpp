// Same-shape and scalar elementwise ops on large tensors: the single
// coalesced run is split into pieces for the OpenMP threads.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "tailor/linalg/threads.h"

namespace tailor::testing {
namespace {

TEST(OpsElementwiseSplit, SameShapeAndScalarRunsMatchTheDefinition) {
  linalg::set_threads(2);
  // 3·50,000 elements: several 16,384-element pieces and a ragged last one.
  const int64_t n = 3 * 50000;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 113) - 56.0f;
    b[i] = static_cast<float>(i % 7) + 1.0f;
  }
  const std::vector<float> sub =
      OneOp{"Sub", {f32({3, 50000}, a), f32({3, 50000}, b)}}.run1().to_f32_vector();
  const std::vector<float> mul =
      OneOp{"Mul", {f32({3, 50000}, a), f32({1}, std::vector<float>{0.5f})}}.run1().to_f32_vector();
  const std::vector<float> div =
      OneOp{"Div", {f32({1}, std::vector<float>{3.0f}), f32({3, 50000}, b)}}.run1().to_f32_vector();
  ASSERT_EQ(sub.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(sub[i], a[i] - b[i]) << i;
    ASSERT_EQ(mul[i], a[i] * 0.5f) << i;
    ASSERT_EQ(div[i], 3.0f / b[i]) << i;
  }
}

}  // namespace
}  // namespace tailor::testing
