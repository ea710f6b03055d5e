// The tuner's measurement harness: checks a candidate against the unoptimized
// graph on seeded random inputs, then times it (cache flush, warm-up,
// repeats, median and median absolute deviation), and re-measures the best
// candidates in interleaved rounds so timing noise does not pick the winner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/tune/cost_model.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// Settings of a Harness.
struct HarnessOptions {
  int warmup = 1;
  int repeats = 5;
  /// Largest accepted error per output: with error "max",
  /// max_j |y_j − r_j| / max(max_j |r_j|, 1e-12)
  /// (the error relative to the reference output's scale). 5e-5: Winograd
  /// F(4×4, 3×3), the default for large 3×3 convs, moves the detector's
  /// random-input output (deep in a sigmoid's tail) by 1.35e-5 of max |y|
  /// against the passes-off reference; a wrong program is off by O(1).
  double tolerance = 5e-5;
  /// Seeded random input sets each candidate is checked on.
  int check_inputs = 1;
  /// Bytes of the buffer written between candidates to flush caches; 0: 2×
  /// the last-level cache (MachineInfo::detect), at most 2 × 64 MiB (a VM
  /// may report the host's whole L3: 508 MiB here, which made every
  /// measurement write 1 GiB and hold it in RSS).
  int64_t flush_bytes = 0;
  /// Threads of the reference run.
  int reference_threads = 1;
  /// The latency the search compares: "median" of the timed runs, or "min"
  /// (robust on a shared, oversubscribed machine, where preemption adds a
  /// large positive delay to some runs).
  std::string statistic = "median";
  /// The clock a run is timed with: "wall" (steady_clock, the latency), or
  /// "cpu" (the process's CPU time, CLOCK_PROCESS_CPUTIME_ID): on a machine
  /// with more runnable threads than cores it leaves out the time the run
  /// was preempted. It equals the latency only for single-threaded
  /// candidates (with T threads it sums their CPU time), so the tuner
  /// accepts it only with one thread.
  std::string clock = "wall";
  /// The error the tolerance bounds: "max" (above: the largest element's
  /// deviation) or "mean" (mean_j |y_j − r_j| / max(max_j |r_j|, 1e-12): the
  /// average deviation, for approximate choices such as a W8A8 kernel
  /// variant, which move a few elements of a probability map far, near a
  /// rounding threshold, and the rest little). NaN is an infinite error either way.
  std::string error = "max";
};

/// The result of checking and timing one configuration.
struct Measurement {
  /// The check passed (every output within tolerance); only then is it timed.
  bool ok = false;
  /// The check's error: the largest over outputs and check inputs of the
  /// HarnessOptions::error metric ("max" or "mean" deviation over max |r|).
  double max_rel_error = 0;
  /// Why the check failed (a pass or kernel error, or the error bound).
  std::string error;
  /// Timed runs in milliseconds (empty when the check failed).
  std::vector<double> times_ms;
  double median_ms = 0;
  double min_ms = 0;
  /// Median absolute deviation of times_ms, in milliseconds.
  double mad_ms = 0;
  /// Peak activation bytes of the candidate's executor.
  int64_t peak_bytes = 0;
  /// Wall time spent checking and measuring, in seconds.
  double cost_s = 0;
};

/// Median of v (mean of the middle two for even sizes); 0 for an empty v.
double median(std::vector<double> v);
/// Median absolute deviation from the median.
double mad(const std::vector<double>& v);

/// Random inputs for the model's graph inputs: f32 uniform in [−1, 1) from
/// `seed`. `shapes` gives the shape of each input whose declared shape has
/// symbolic dims (a symbolic first dim defaults to 1). Throws Error naming the
/// input for a non-f32 input or a missing shape.
std::map<std::string, Tensor> random_inputs(
    const graph::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
    uint64_t seed);

/// Shapes of every main-graph value on one run of `model` on `inputs`.
ValueShapes observe_shapes(const graph::Model& model, const std::map<std::string, Tensor>& inputs);

/// The cost model's measured default start: every coefficient 0.1 but those
/// of the four kernel kinds' FLOP terms (gemm, Winograd, compressed
/// weight-only, W8A8), each the milliseconds per 10⁷ FLOPs of one probe layer
/// on that kernel at one thread (128 channels at 28²: a 1×1 Conv, a 3×3 Conv
/// the runtime runs by Winograd, a 1×1 CompressedConv of int8 codes and of
/// int8-a8 codes), the fastest of `repeats` timed runs after a warm-up,
/// clamped to [1e-4, 10]. With equal coefficients the model cannot tell a
/// W8A8 kernel variant from the weight-only one (they do the same FLOPs), so
/// the gradient method never proposed it; ~0.1 s. Restores the thread count.
CostModel measured_start(int repeats = 5);

class Harness {
 public:
  /// Runs the unoptimized `reference` on `options.check_inputs` random input
  /// sets (seeds seed, seed+1, ...) to get the reference outputs.
  Harness(const graph::Model& reference,
          const std::map<std::string, std::vector<int64_t>>& input_shapes, uint64_t seed,
          HarnessOptions options);
  /// The same on the given input sets (inputs read from files: `tailor
  /// tune --input`), options.check_inputs aside; the first is also the one
  /// timed. Throws Error("harness", ...) when `inputs` is empty, and the
  /// executor's Error naming an input the model does not take as given.
  Harness(const graph::Model& reference, std::vector<std::map<std::string, Tensor>> inputs,
          HarnessOptions options);
  /// Checks `c` on every check input; fills ok, max_rel_error and error.
  Measurement check(const AppliedConfiguration& c) const;
  /// check(), then — only when it passed — flush, warm-up and timed repeats.
  Measurement measure(const AppliedConfiguration& c) const;
  /// Interleaved re-measurement: `rounds` rounds, each flushes then times
  /// every candidate once (the order rotates by one each round), each alone in
  /// the process as measure() and `tailor run` run it: its executor built,
  /// warmed up (HarnessOptions::warmup runs, at least one), timed once and
  /// freed. With every candidate's executor kept alive across rounds, ISNet's
  /// four (287 MiB of activations each) ran 20–30% slower than alone and
  /// ranked a configuration 4% ahead that `tailor run` finds equal. Returns
  /// times[round][candidate] in milliseconds.
  std::vector<std::vector<double>> paired(const std::vector<AppliedConfiguration>& candidates,
                                          int rounds) const;
  const std::map<std::string, Tensor>& inputs() const { return inputs_.front(); }
  const HarnessOptions& options() const { return options_; }

 private:
  static std::vector<std::map<std::string, Tensor>> seeded_inputs(
      const graph::Model& reference, const std::map<std::string, std::vector<int64_t>>& shapes,
      uint64_t seed, int count);
  void flush() const;
  std::vector<std::map<std::string, Tensor>> inputs_;
  std::vector<std::map<std::string, Tensor>> reference_;
  HarnessOptions options_;
  mutable std::vector<char> flush_buffer_;
};

}  // namespace tailor::tune
