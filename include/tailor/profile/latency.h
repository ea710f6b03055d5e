// Latency as a plan resource (DESIGN.md, "Planning"): every candidate of every
// profiled layer timed on the layer's real shape with the kernel tailor runs
// for it, and the whole model timed as `tailor run` runs it. Clock: CPU time
// of the process (CLOCK_PROCESS_CPUTIME_ID) at 1 thread, so that other load on
// the machine inflates it less than wall time; the median of `repeats` runs
// after `warmup` runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/profile/model_profile.h"

namespace tailor {

/// How latencies are measured.
struct LatencyOptions {
  /// Untimed runs before the timed ones (caches, packed weights, arena).
  int warmup = 1;
  /// Timed runs; the median is kept. ≥ 1.
  int repeats = 5;
};

/// `model` as `tailor run` runs it: compressed-weight forms recognised as
/// CompressedLinear / CompressedConv (graph::recognise_compressed_weights),
/// f16 computed in f32, then every registered pass ("all").
graph::Model runnable_model(const graph::Model& model);

/// Median CPU milliseconds of Executor::run of each of `models` (runnable
/// ones: runnable_model) on `inputs` at 1 thread, measured in interleaved
/// rounds (each round runs every model once, the order rotating), so that a
/// change of load reaches every model alike. Restores the thread count.
/// Throws Error as Executor::run does, and (source "latency") for repeats < 1.
std::vector<double> interleaved_latency_ms(const std::vector<const graph::Model*>& models,
                                           const std::map<std::string, Tensor>& inputs,
                                           const LatencyOptions& options);

/// "x [1,3,48,320]; cpu 1 thread; median of 5 after 1": what the latencies
/// of measure_latencies depend on besides the model (ProfileOptions::latency_key).
std::string latency_key(const std::map<std::string, Tensor>& inputs, const LatencyOptions& options);

/// Fills Candidate::latency_ms of every candidate of every layer of `profile`
/// whose weight feeds input 1 of a MatMul, Gemm or Conv of `model`'s main
/// graph with an input shape that shape inference fixes once the graph
/// inputs take the shapes of `inputs`: that op alone (its weight and bias as
/// initializers (or Constant values), its input of that shape, uniform [−1, 1) from seed 0) timed
/// as interleaved_latency_ms does — "dense" as the original op, every other
/// label as the CompressedLinear / CompressedConv tailor runs for the
/// label's stored form (schemes::stored_form; int8-a8 itself, its W8A8 kernel) encoded from the
/// weight, a low-rank label from random factors of its shapes (its kernel does not depend on the
/// values). A label whose op does not fit a compressed op (grouped conv, Gemm with alpha ≠ 1) runs
/// dense in tailor and gets the dense latency; a label whose encoder refuses the weight gets none.
/// Layers measured this way are independent of each other; the rest of the model is
/// profile.latency_rest_ms = (the whole model's latency, latency_model_ms) −
/// Σ the measured layers' dense latency, at least 0. Sets latency_input.
/// Layers not matched keep no latency (their time is in the rest), as does
/// a layer whose op fails to run alone (a warning naming it on stderr).
/// Throws Error naming the input for an input the model lacks, and as
/// Executor::run does.
void measure_latencies(const graph::Model& model, const std::map<std::string, Tensor>& inputs,
                       ModelProfile& profile, const LatencyOptions& options = {});

}  // namespace tailor
