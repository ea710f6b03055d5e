// The executor: runs a graph::Model on the CPU, node by node in a topological
// schedule, with activation buffers reused by liveness.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {

class ArenaHeap;

/// Activation memory. Each tensor gets its own block of a heap carved from
/// address space reserved from the system (runtime/executor.cpp, ArenaHeap:
/// chunks of ≥ 1 GiB mapped MAP_NORESERVE, so a page costs memory only once
/// written): first fit at the lowest free address, 64-byte aligned; a block
/// returns to the heap when the last tensor viewing it dies, merged with its
/// free neighbours. Runs of a graph of fixed shapes whose outputs are dropped
/// before the next run place their tensors the same way every run, so the
/// memory touched (pooled_bytes) stops growing after the first (a pool of
/// whole buffers matched to new tensors by size, before, kept growing: the
/// detector's 47 MiB after one run, 68 MiB after seven).
class Arena {
 public:
  Arena();
  ~Arena();
  /// A contiguous tensor of `dtype` and `shape` over a block of the heap.
  Tensor alloc(DType dtype, Shape shape);
  /// Bytes of the heap ever used: the highest end of a block in each chunk,
  /// summed (what the arena has written of the memory it reserved).
  size_t pooled_bytes() const;
  /// The most bytes of blocks in use at once (viewed by live tensors),
  /// measured at each allocation since construction or reset_peak().
  size_t peak_live_bytes() const { return peak_live_; }
  void reset_peak() { peak_live_ = 0; }
  /// When set, run_plan adds each step's wall time (milliseconds) and count
  /// under its op type (subgraph steps included, If counts its branch too).
  std::map<std::string, std::pair<double, int64_t>>* op_profile = nullptr;
  /// With op_profile: the same per node, under its label ("Conv 'conv1'").
  std::map<std::string, std::pair<double, int64_t>>* node_profile = nullptr;

 private:
  std::shared_ptr<ArenaHeap> heap_;  // shared with every block it gave out
  size_t peak_live_ = 0;
};

/// A compiled graph: the schedule with each node's kernel and the liveness of
/// its values. Built by Executor (subgraphs by their node's kernel).
struct Plan {
  struct Step {
    const graph::Node* node = nullptr;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // slot per input, -1 when omitted
    std::vector<int> outputs;  // slot per output, -1 when the output name is empty
    std::vector<int> release;  // slots dead after this step
  };
  const graph::Graph* graph = nullptr;
  int64_t opset = 0;
  std::vector<std::string> slot_names;
  std::unordered_map<std::string, int> slot_of;
  /// Initializer tensors by slot (undefined for other slots).
  std::vector<Tensor> constants;
  /// Slots read from the enclosing graph by name (outer scope).
  std::vector<int> outer_slots;
  std::vector<int> input_slots;
  std::vector<int> output_slots;
  std::vector<Step> steps;
};

/// Values of one execution of a Plan; `parent` resolves outer-scope names.
struct Frame {
  const Plan* plan = nullptr;
  const Frame* parent = nullptr;
  std::vector<Tensor> values;
  /// The tensor named `name` in this frame or an enclosing one, or nullptr.
  const Tensor* lookup(const std::string& name) const;
};

/// Runs `plan` with `inputs` (one per plan input, in order; moved into the
/// run's frame) inside `parent`'s scope; returns the plan's outputs in order.
std::vector<Tensor> run_plan(const Plan& plan, std::vector<Tensor> inputs, const Frame* parent,
                             Arena& arena);

/// Runs steps [begin, end) of `frame.plan` over `frame`'s values, releasing
/// each value after its last reader as run_plan does (end past the last step
/// stops there).
void run_steps(Frame& frame, size_t begin, size_t end, Arena& arena);

/// Options of an Executor.
struct ExecutorOptions {
  /// Verify the graph (graph::verify) before compiling it.
  bool verify = true;
};

/// Loads a model for execution: every node's op is looked up in the registry
/// and its kernel prepared, so a missing op is an Error naming the op type and
/// the node at construction, never at the first run.
class Executor {
 public:
  explicit Executor(graph::Model model, ExecutorOptions options = {});
  ~Executor();

  /// Runs the model. `inputs` maps every graph input name to a tensor of the
  /// declared dtype and of the declared shape where its dims are known
  /// (symbolic dims take any size). Returns every graph output by name.
  /// Throws Error naming the input for a missing, unknown, mistyped or
  /// misshapen input, and naming the node for a kernel failure.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  /// The same run with `inputs` in input_names() order (moved into the run,
  /// each checked as run() checks it) and the outputs returned in
  /// output_names() order: no map by name built or searched (a decoder step
  /// runs once per token). Throws Error naming the input for a wrong count
  /// ("missing" or "the model has no such input" by position), dtype or shape.
  std::vector<Tensor> run_ordered(std::vector<Tensor> inputs);

  const graph::Model& model() const { return model_; }
  /// The compiled schedule (what CutRun steps through).
  const Plan& plan() const { return *plan_; }
  const std::vector<std::string>& input_names() const { return model_.graph.inputs; }
  const std::vector<std::string>& output_names() const { return model_.graph.outputs; }
  /// Peak bytes of activation buffers in use at once during the runs so far
  /// (weights and inputs not counted).
  size_t peak_activation_bytes() const { return arena_.peak_live_bytes(); }
  /// Bytes the buffer pool holds (≥ the peak, by fragmentation).
  size_t pooled_activation_bytes() const { return arena_.pooled_bytes(); }
  /// Starts (or stops, with false) accumulating per-op-type time over runs.
  void set_profiling(bool on) {
    arena_.op_profile = on ? &profile_ : nullptr;
    arena_.node_profile = on ? &node_profile_ : nullptr;
  }
  /// Op type → (total milliseconds, executions) since profiling started.
  const std::map<std::string, std::pair<double, int64_t>>& op_profile() const { return profile_; }
  /// Node label → (total milliseconds, executions) since profiling started.
  const std::map<std::string, std::pair<double, int64_t>>& node_profile() const {
    return node_profile_;
  }

 private:
  graph::Model model_;
  std::shared_ptr<Plan> plan_;
  /// The declared type of each graph input (null when undeclared), in order.
  std::vector<const graph::ValueType*> input_types_;
  Arena arena_;
  std::map<std::string, std::pair<double, int64_t>> profile_;
  std::map<std::string, std::pair<double, int64_t>> node_profile_;
};

/// One run of an Executor's model held at a cut in its schedule, so the
/// prefix runs once and the suffix many times with a value replaced (the
/// output-damage measurement: every candidate weight of a layer through the
/// layers after it). A suffix run with nothing replaced gives bit for bit the
/// outputs of Executor::run on the same inputs (the same kernels on the same
/// values in the same order). The executor must outlive the run.
class CutRun {
 public:
  /// A run on `inputs` (checked as Executor::run checks them) before its first step.
  CutRun(const Executor& executor, const std::map<std::string, Tensor>& inputs);
  /// Steps run so far: the cut.
  size_t position() const { return position_; }
  /// Steps of the schedule.
  size_t steps() const;
  /// The first step at or after the cut that reads main-graph value `value`
  /// (a node holding a subgraph counts as reading every value); steps() when
  /// none does. Throws Error naming the value when the main graph lacks it.
  size_t first_reader(const std::string& value) const;
  /// Runs the steps from the cut up to (not including) `step`, which becomes
  /// the cut. Throws Error when `step` is before the cut.
  void advance(size_t step);
  /// Runs the steps after the cut on a copy of the values, with the named
  /// values (initializers or values computed before the cut) replaced; returns
  /// every graph output by name. The run stays at its cut. Throws Error naming
  /// a value the main graph lacks, and as Executor::run for a kernel failure.
  std::map<std::string, Tensor> finish(const std::map<std::string, Tensor>& replaced = {});
  /// Replaces the named values (initializers, inputs or values computed before
  /// the cut) for every step after the cut, this run's own steps and finish's:
  /// a weight swapped mid-run (sequential GPTQ). Throws Error naming a value
  /// the main graph lacks.
  void replace(const std::map<std::string, Tensor>& values);
  /// Main-graph value `value` at the cut (an initializer, an input or a value
  /// computed before the cut and still live); its storage may be reused once
  /// the run advances. Throws Error naming the value when the main graph lacks
  /// it or it is not available at the cut.
  Tensor value(const std::string& value) const;

 private:
  const Executor* executor_;
  Frame frame_;
  Arena arena_;
  size_t position_ = 0;
};

/// Compiles `g` (a main graph or a subgraph) into a Plan; `opset` is the
/// model's default-domain opset. Throws Error naming the op type and the node
/// for an op the runtime lacks or attributes it refuses.
std::shared_ptr<Plan> compile_plan(const graph::Graph& g, int64_t opset, const std::string& source);

}  // namespace tailor::runtime
