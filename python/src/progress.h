// The Python progress callback of a long call that runs with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace tailor::python {

/// Thrown on the calling thread, after the callback raised, to unwind the
/// C++ work; the call site catches it and raises the callback's exception.
struct CallbackRaised {};

/// Wraps an optional Python callable taking one argument (the Python layer's
/// progress event). Calls take the GIL; calls are serialised. When the
/// callable raises, its exception is kept, later calls do nothing, and a call
/// made with `may_unwind` on the thread that made the Progress throws
/// CallbackRaised to end the work; other calls never throw (a profile
/// worker's, the calling thread's too, must not: profile_model joins its
/// workers only on its normal path). finish() raises the kept exception with
/// the GIL held.
class Progress {
 public:
  /// `fn` may be None. Construct with the GIL held.
  explicit Progress(pybind11::object fn)
      : fn_(std::move(fn)), origin_(std::this_thread::get_id()) {}
  ~Progress() {
    pybind11::gil_scoped_acquire gil;
    fn_ = pybind11::object();
    error_.reset();
  }

  bool active() const { return !fn_.is_none(); }

  /// Calls fn(make_event()) with the GIL held. `make_event` builds the argument.
  /// `may_unwind`: the caller's C++ code is safe to unwind from here.
  template <class MakeEvent>
  void call(MakeEvent&& make_event, bool may_unwind) {
    if (!active()) return;
    std::lock_guard lock(mu_);
    if (!error_) {
      pybind11::gil_scoped_acquire gil;
      try {
        fn_(make_event());
      } catch (pybind11::error_already_set& e) {
        error_.emplace(std::move(e));
      }
    }
    if (error_ && may_unwind && std::this_thread::get_id() == origin_) throw CallbackRaised{};
  }

  /// Raises the callback's exception, if any (GIL held).
  void finish() {
    if (error_) {
      pybind11::error_already_set e = std::move(*error_);
      error_.reset();
      throw e;
    }
  }

 private:
  pybind11::object fn_;
  std::thread::id origin_;
  std::mutex mu_;
  std::optional<pybind11::error_already_set> error_;
};

/// Runs `work` with the GIL released; a CallbackRaised from it ends the work
/// and `progress`'s exception is raised instead (and raised too when the
/// callback failed on a worker thread while the work went on).
template <class Work>
auto released(Progress& progress, Work&& work) -> decltype(work()) {
  using R = decltype(work());
  std::optional<R> result;
  try {
    pybind11::gil_scoped_release nogil;
    result.emplace(work());
  } catch (const CallbackRaised&) {
  }
  progress.finish();
  return std::move(*result);
}

}  // namespace tailor::python
