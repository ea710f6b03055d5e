// linalg::parallel_for, the runtime's intra-op threads: every item runs
// exactly once whatever the team, nested loops and loops below the rule stay
// on the calling thread, exceptions reach the caller, and two threads really
// share a loop.
#include "tailor/linalg/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tailor/linalg/threads.h"

namespace tailor::testing {
namespace {

TEST(ParallelFor, RunsEveryItemOnceAtEachTeamSize) {
  for (const int team : {1, 2, 3}) {
    const linalg::ThreadLimit limit(team);
    for (const int64_t items : {0, 1, 2, 7, 64, 1000}) {
      SCOPED_TRACE("team " + std::to_string(team) + ", items " + std::to_string(items));
      std::vector<std::atomic<int>> runs(static_cast<size_t>(items));
      for (auto& r : runs) r.store(0);
      linalg::parallel_for(items, true, [&](int64_t i) { runs[static_cast<size_t>(i)]++; });
      for (int64_t i = 0; i < items; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
    }
  }
}

// Many short loops back to back (workers polling, claiming late, finding a
// later loop): each loop's items sum to the loop's own total.
TEST(ParallelFor, ManyConsecutiveLoopsEachComplete) {
  const linalg::ThreadLimit limit(2);
  for (int64_t loop = 0; loop < 20000; ++loop) {
    const int64_t items = 1 + loop % 13;
    std::atomic<int64_t> sum{0};
    linalg::parallel_for(items, true, [&](int64_t i) { sum += (loop + 1) * (i + 1); });
    ASSERT_EQ(sum.load(), (loop + 1) * items * (items + 1) / 2) << loop;
  }
}

TEST(ParallelFor, BelowTheRuleAndNestedLoopsRunInOrderOnTheCallingThread) {
  const linalg::ThreadLimit limit(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int64_t> order;
  linalg::parallel_for(5, false, [&](int64_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(linalg::detail::in_parallel_for());
  std::atomic<int> bad{0}, inner_runs{0};
  linalg::parallel_for(4, true, [&](int64_t) {
    if (!linalg::detail::in_parallel_for()) bad++;
    const std::thread::id outer = std::this_thread::get_id();
    std::vector<int64_t> inner_order;
    linalg::parallel_for(6, true, [&](int64_t j) {
      if (std::this_thread::get_id() != outer) bad++;
      inner_order.push_back(j);
      inner_runs++;
    });
    if (inner_order != std::vector<int64_t>{0, 1, 2, 3, 4, 5}) bad++;
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(inner_runs.load(), 24);
  EXPECT_FALSE(linalg::detail::in_parallel_for());
}

TEST(ParallelFor, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  const linalg::ThreadLimit limit(2);
  std::atomic<int> runs{0};
  EXPECT_THROW(linalg::parallel_for(50, true,
                                    [&](int64_t i) {
                                      runs++;
                                      if (i == 17) throw std::runtime_error("item 17");
                                    }),
               std::runtime_error);
  EXPECT_EQ(runs.load(), 50);  // the other items still ran
  std::atomic<int64_t> sum{0};
  linalg::parallel_for(100, true, [&](int64_t i) { sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

// Two items that each wait for the other to start: they finish only if two
// threads run them at once (a worker that is slow to wake gets seconds).
TEST(ParallelFor, TwoThreadsShareALoop) {
  const linalg::ThreadLimit limit(2);
  std::atomic<int> started{0};
  std::atomic<bool> both{true};
  std::thread::id ids[2];
  linalg::parallel_for(2, true, [&](int64_t i) {
    ids[i] = std::this_thread::get_id();
    started++;
    const auto t0 = std::chrono::steady_clock::now();
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
        both = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(both.load());
  EXPECT_NE(ids[0], ids[1]);
}

}  // namespace
}  // namespace tailor::testing
