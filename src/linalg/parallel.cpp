// parallel_for's pool (tailor/linalg/parallel.h): workers that poll for the
// next loop for kPoolSpinMicros (yielding the core now and then), then sleep
// on a futex (std::atomic::wait);
// items claimed in chunks from one counter that also carries the loop's
// generation, so a worker that wakes late can never run items of a loop that
// has already finished.
#include "tailor/linalg/parallel.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tailor/linalg/threads.h"

namespace tailor::linalg::detail {

namespace {

thread_local bool t_in_loop = false;

/// Chunks per thread a loop is cut into for claiming: a few, so that a
/// thread that starts late or runs slower still leaves work to share, while
/// the counter is touched only a few times per thread.
constexpr int64_t kChunksPerThread = 4;

/// The claim word's item index while a loop's fields are being written: past
/// any loop's items (parallel_run takes fewer than 2^31).
constexpr uint64_t kClosed = 0xffffffffu;

class Pool {
 public:
  /// Runs the loop over `threads` threads (the caller and threads − 1 workers).
  void run(int threads, int64_t items, RangeFn fn, const void* ctx) {
    grow(threads - 1);
    const int64_t chunk = std::max<int64_t>(1, items / (threads * kChunksPerThread));
    const uint64_t gen = ++generation_;
    // Close every earlier loop before its fields change: a worker that read
    // the last loop's claim word (all claimed) and then this loop's larger
    // item count must fail its claim, not run this loop's items under the
    // old generation. Sequentially consistent with run_chunks' loads and
    // claim, so a claim that succeeds saw only fields stored before it.
    claim_.store((gen << 32) | kClosed, std::memory_order_seq_cst);
    done_.store(0, std::memory_order_seq_cst);
    fn_.store(fn, std::memory_order_seq_cst);
    ctx_.store(ctx, std::memory_order_seq_cst);
    items_.store(items, std::memory_order_seq_cst);
    chunk_.store(chunk, std::memory_order_seq_cst);
    workers_.store(threads - 1, std::memory_order_seq_cst);
    claim_.store(gen << 32, std::memory_order_seq_cst);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();
    run_chunks(gen);
    // Only chunks that a worker has claimed are left: wait for them, giving
    // the core up now and then in case that worker shares it with us.
    for (int spins = 0; done_.load(std::memory_order_acquire) < items; ++spins) {
      if (spins < 4096)
        _mm_pause();
      else
        std::this_thread::yield();
    }
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      std::swap(error, error_);
    }
    if (error) std::rethrow_exception(error);
  }

  std::mutex& busy() { return busy_; }

 private:
  /// Claims and runs chunks of loop `gen` until none is left (or a later
  /// loop has replaced it).
  void run_chunks(uint64_t gen) {
    for (;;) {
      uint64_t v = claim_.load(std::memory_order_seq_cst);
      if ((v >> 32) != gen) return;
      const int64_t begin = static_cast<int64_t>(v & 0xffffffffu);
      // Read before the claim: if the claim succeeds, the claim word was
      // still v, so no later loop had been opened (run closes the word
      // first) and these are loop `gen`'s fields.
      const int64_t items = items_.load(std::memory_order_seq_cst);
      const int64_t chunk = chunk_.load(std::memory_order_seq_cst);
      const RangeFn fn = fn_.load(std::memory_order_seq_cst);
      const void* ctx = ctx_.load(std::memory_order_seq_cst);
      if (begin >= items) return;
      const int64_t end = std::min(items, begin + chunk);
      if (!claim_.compare_exchange_weak(v, (gen << 32) | static_cast<uint64_t>(end),
                                        std::memory_order_seq_cst))
        continue;
      t_in_loop = true;
      try {
        fn(ctx, begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      t_in_loop = false;
      done_.fetch_add(end - begin, std::memory_order_acq_rel);
    }
  }

  void grow(int workers) {
    while (static_cast<int>(threads_.size()) < workers) {
      const int index = static_cast<int>(threads_.size());
      // The epoch before this loop's: the new worker takes part in it.
      const uint32_t seen = epoch_.load(std::memory_order_acquire);
      threads_.emplace_back([this, index, seen] { work(index, seen); });
      threads_.back().detach();  // the pool lives as long as the process
    }
  }

  void work(int index, uint32_t seen) {
    omp_set_num_threads(1);  // an OpenMP region inside an item stays on this thread
    bool poll = true;        // false after a loop of a smaller team: sleep at once
    for (;;) {
      auto idle_since = std::chrono::steady_clock::now();
      for (int spins = 1; epoch_.load(std::memory_order_acquire) == seen; ++spins) {
        _mm_pause();
        if (spins % 64 != 0) continue;
        // Every 64 pauses the core goes to any thread waiting for it (this
        // process's caller among them on a loaded machine: the recogniser at
        // 2 threads, one core busy elsewhere, 7.7-8.0 ms median with the
        // yield, 8.1-8.9 without, 7.9-8.2 with passive OpenMP).
        std::this_thread::yield();
        const auto now = std::chrono::steady_clock::now();
        if (poll && now - idle_since < std::chrono::microseconds(kPoolSpinMicros)) continue;
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        epoch_.wait(seen, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        idle_since = std::chrono::steady_clock::now();
      }
      seen = epoch_.load(std::memory_order_acquire);
      poll = index < workers_.load(std::memory_order_acquire);
      if (poll) run_chunks(claim_.load(std::memory_order_acquire) >> 32);
    }
  }

  alignas(64) std::atomic<uint64_t> claim_{0};  // generation << 32 | next unclaimed item
  alignas(64) std::atomic<int64_t> done_{0};    // items finished
  alignas(64) std::atomic<uint32_t> epoch_{0};  // bumped for each loop; workers wait on it
  std::atomic<int> sleepers_{0};
  std::atomic<RangeFn> fn_{nullptr};
  std::atomic<const void*> ctx_{nullptr};
  std::atomic<int64_t> items_{0}, chunk_{1};
  std::atomic<int> workers_{0};
  uint64_t generation_ = 0;  // written by the thread holding busy_
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::mutex busy_;  // one loop at a time; a second caller runs its loop serially
  std::vector<std::thread> threads_;
};

Pool& pool() {
  static Pool* const p = new Pool;  // never destroyed: detached workers use it until exit
  return *p;
}

}  // namespace

bool in_parallel_for() {
  return t_in_loop;
}

void parallel_run(int64_t items, RangeFn fn, const void* ctx) {
  const int team = threads();
  const bool serial = team <= 1 || t_in_loop || omp_in_parallel() || items >= (int64_t{1} << 31);
  std::unique_lock<std::mutex> lock;
  if (!serial) lock = std::unique_lock<std::mutex>(pool().busy(), std::try_to_lock);
  if (serial || !lock.owns_lock()) {
    const bool outer = !t_in_loop;
    t_in_loop = true;
    try {
      fn(ctx, 0, items);
    } catch (...) {
      if (outer) t_in_loop = false;
      throw;
    }
    if (outer) t_in_loop = false;
    return;
  }
  pool().run(std::min<int64_t>(team, items), items, fn, ctx);
}

}  // namespace tailor::linalg::detail
