// The runtime's intra-op threads: parallel_for hands the items of one loop to
// a pool of workers that stay awake between consecutive loops, so that an
// operator's loop pays no futex wake-up of a sleeping team (an OpenMP region
// under OMP_WAIT_POLICY=passive: 8–12 µs here, tens on a loaded machine).
#pragma once

#include <cstdint>

namespace tailor::linalg {

/// How long a worker of parallel_for's pool keeps polling for the next loop
/// after its last one before it sleeps on a futex, in microseconds: longer
/// than the gap between two operators' loops in a network (a few µs to
/// ~0.1 ms of serial ops), short enough that an idle process gives its cores
/// back within a fraction of a millisecond (onnxruntime's pool polls too).
inline constexpr int64_t kPoolSpinMicros = 200;

namespace detail {
/// body(ctx, begin, end) for the items [begin, end) of one loop.
using RangeFn = void (*)(const void* ctx, int64_t begin, int64_t end);
/// parallel_for's engine; see there.
void parallel_run(int64_t items, RangeFn fn, const void* ctx);
/// Whether the calling thread is running items of a parallel_for.
bool in_parallel_for();
}  // namespace detail

/// Calls body(i) once for every i in [0, items) and returns when all are
/// done. With `threads` false, a team of one (linalg::threads(), the count
/// set_threads gives the calling thread), items ≤ 1, or when called from
/// inside another parallel_for or an OpenMP region, the items run in order
/// on the calling thread with no synchronisation at all. Else the calling
/// thread and threads() − 1 pool workers claim chunks of consecutive items
/// from a shared counter until none is left: which thread runs an item
/// depends on timing, so body(i) must compute item i the same way on any
/// thread (a partition fixed by the shape, per-thread scratch in
/// thread_local storage) for the results not to depend on the thread count.
/// A worker that is asleep or descheduled when the loop starts simply claims
/// nothing: the caller never waits for a thread that has not started an
/// item, only for chunks already claimed. An exception thrown by body is
/// rethrown to the caller (the first one; the remaining items still run).
template <class Body>
void parallel_for(int64_t items, bool threads, const Body& body) {
  if (items <= 0) return;
  // One instance of the loop over body serves both paths (half the code).
  constexpr detail::RangeFn range = [](const void* ctx, int64_t begin, int64_t end) {
    const Body& b = *static_cast<const Body*>(ctx);
    for (int64_t i = begin; i < end; ++i) b(i);
  };
  if (!threads || items == 1) {
    range(&body, 0, items);
    return;
  }
  detail::parallel_run(items, range, &body);
}

}  // namespace tailor::linalg
