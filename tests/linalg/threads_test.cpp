// linalg::set_threads, the one thread setting of every command.
#include "tailor/linalg/threads.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace tailor::testing {
namespace {

// The one setting: OpenMP's team follows n, OpenBLAS
// stays serial, out-of-range counts are refused naming --threads; ThreadLimit
// restores the count it found.
TEST(Threads, SetThreadsBoundsOpenMpAndKeepsBlasSerial) {
  const int before = linalg::threads();
  linalg::set_threads(3);
  EXPECT_EQ(linalg::threads(), 3);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  {
    const linalg::ThreadLimit one(1);
    EXPECT_EQ(linalg::threads(), 1);
  }
  EXPECT_EQ(linalg::threads(), 3);
  EXPECT_EQ(linalg::resolve_threads(5), 5);
  EXPECT_GE(linalg::resolve_threads(0), 1);
  for (int bad : {-1, linalg::kMaxThreads + 1})
    expect_error_naming([&] { linalg::set_threads(bad); }, "--threads", "must be between 0 and");
  linalg::set_threads(before);
}

}  // namespace
}  // namespace tailor::testing
