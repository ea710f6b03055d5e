#include "tailor/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <tuple>

#include <sys/mman.h>

#include "runtime/kv_cache.h"
#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::runtime {
namespace {

/// The value of `slot` in `f`: its own when defined, else the plan's constant
/// (read in place: constants are not copied into a frame).
const Tensor* value_of(const Frame& f, int slot) {
  const Tensor& v = f.values[static_cast<size_t>(slot)];
  return v.defined() ? &v : &f.plan->constants[static_cast<size_t>(slot)];
}

}  // namespace

/// The arena's heap (executor.h, Arena): chunks of address space, each
/// carved first fit at the lowest free address. Blocks come back from any
/// thread (a tensor may die anywhere), so the lists are under a mutex.
class ArenaHeap {
 public:
  ArenaHeap() = default;
  ArenaHeap(const ArenaHeap&) = delete;
  ArenaHeap& operator=(const ArenaHeap&) = delete;
  ~ArenaHeap() {
    for (const Chunk& c : chunks_) munmap(c.base, c.size);
  }

  /// A block of `bytes` (a multiple of 64, > 0): its chunk and offset.
  std::pair<size_t, size_t> take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    live_ += bytes;
    for (size_t ci = 0; ci < chunks_.size(); ++ci)
      if (auto off = carve(chunks_[ci], bytes)) return {ci, *off};
    // A new chunk: at least kChunk of address space, no memory until written.
    // Where address space is capped (ulimit -v) or overcommit is strict, a
    // 1 GiB reservation can fail: then a chunk of just the block's size.
    size_t size = std::max(kChunk, (bytes + kChunk - 1) / kChunk * kChunk);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      size = (bytes + kSmallChunk - 1) / kSmallChunk * kSmallChunk;
      p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) {
      live_ -= bytes;
      throw std::bad_alloc();
    }
    chunks_.push_back(Chunk{static_cast<std::byte*>(p), size, {{0, size}}, 0});
    return {chunks_.size() - 1, *carve(chunks_.back(), bytes)};
  }

  /// Returns the block [off, off + bytes) of chunk `ci`, merged with free neighbours.
  void give(size_t ci, size_t off, size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    live_ -= bytes;
    auto& free = chunks_[ci].free;
    auto next = free.lower_bound(off);
    if (next != free.end() && off + bytes == next->first) {
      bytes += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += bytes;
        return;
      }
    }
    free.emplace_hint(next, off, bytes);
  }

  std::byte* base(size_t ci) {
    std::lock_guard<std::mutex> lock(mu_);
    return chunks_[ci].base;
  }
  /// Bytes of the blocks given out and not yet returned.
  size_t live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  /// The highest end of a block in each chunk, summed.
  size_t extent() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t sum = 0;
    for (const Chunk& c : chunks_) sum += c.top;
    return sum;
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 30;
  static constexpr size_t kSmallChunk = size_t{1} << 21;
  struct Chunk {
    std::byte* base;
    size_t size;
    std::map<size_t, size_t> free;  // offset → bytes, neighbours never adjacent
    size_t top;                     // the highest end of a block given out
  };
  static std::optional<size_t> carve(Chunk& c, size_t bytes) {
    for (auto it = c.free.begin(); it != c.free.end(); ++it) {
      if (it->second < bytes) continue;
      const size_t off = it->first, rest = it->second - bytes;
      c.free.erase(it);
      if (rest) c.free.emplace(off + bytes, rest);
      c.top = std::max(c.top, off + bytes);
      return off;
    }
    return std::nullopt;
  }

  mutable std::mutex mu_;
  std::vector<Chunk> chunks_;
  size_t live_ = 0;
};

namespace {

/// A block of the arena's heap, given back when the last tensor viewing it dies.
class ArenaStorage final : public Storage {
 public:
  ArenaStorage(std::shared_ptr<ArenaHeap> heap, size_t bytes, size_t size)
      : heap_(std::move(heap)), bytes_(bytes), size_(size) {
    std::tie(chunk_, off_) = heap_->take(bytes_);
    data_ = heap_->base(chunk_) + off_;
  }
  ~ArenaStorage() override { heap_->give(chunk_, off_, bytes_); }
  const std::byte* data() const override { return data_; }
  std::byte* mutable_data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  std::shared_ptr<ArenaHeap> heap_;
  size_t bytes_, size_;  // the block's bytes (64-byte multiple), the tensor's
  size_t chunk_ = 0, off_ = 0;
  std::byte* data_ = nullptr;
};

}  // namespace

Arena::Arena() : heap_(std::make_shared<ArenaHeap>()) {}
Arena::~Arena() = default;

size_t Arena::pooled_bytes() const {
  return heap_->extent();
}

Tensor Arena::alloc(DType dtype, Shape shape) {
  const size_t bytes = shape_bytes(shape, dtype);
  if (bytes == 0) return Tensor::zeros(dtype, std::move(shape));
  auto storage = std::make_shared<ArenaStorage>(heap_, (bytes + 63) / 64 * 64, bytes);
  peak_live_ = std::max(peak_live_, heap_->live());
  return Tensor::view(std::move(storage), 0, dtype, std::move(shape));
}

const Tensor* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent) {
    auto it = f->plan->slot_of.find(name);
    if (it == f->plan->slot_of.end()) continue;
    if (const Tensor* t = value_of(*f, it->second); t->defined()) return t;
  }
  return nullptr;
}

std::shared_ptr<Plan> compile_plan(const graph::Graph& g, int64_t opset,
                                   const std::string& source) {
  auto plan = std::make_shared<Plan>();
  plan->graph = &g;
  plan->opset = opset;
  auto slot = [&](const std::string& name) {
    auto [it, fresh] = plan->slot_of.emplace(name, static_cast<int>(plan->slot_names.size()));
    if (fresh) {
      plan->slot_names.push_back(name);
      plan->constants.emplace_back();
    }
    return it->second;
  };
  std::set<std::string> defined;
  for (const auto& in : g.inputs) {
    plan->input_slots.push_back(slot(in));
    defined.insert(in);
  }
  for (const auto& [name, t] : g.initializers) {
    plan->constants[static_cast<size_t>(slot(name))] = t;
    defined.insert(name);
  }
  // The schedule is the file's node order, which ONNX requires to be
  // topological; check it while assigning slots.
  std::vector<std::vector<int>> implicit(g.nodes.size());
  std::vector<int> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    Plan::Step step;
    step.node = &n;
    for (const auto& in : n.inputs) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        continue;
      }
      if (!defined.count(in) && !plan->slot_of.count(in)) {
        plan->outer_slots.push_back(slot(in));
        defined.insert(in);
      }
      step.inputs.push_back(slot(in));
    }
    for (const auto& v : graph::subgraph_free_names(n)) {
      if (!defined.count(v)) {
        plan->outer_slots.push_back(slot(v));
        defined.insert(v);
      }
      implicit[i].push_back(slot(v));
    }
    for (const auto& out : n.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      if (defined.count(out))
        throw Error(source, g.node_label(i) + " redefines value '" + out + "'");
      defined.insert(out);
      step.outputs.push_back(slot(out));
    }
    const KernelFactory* factory = find_op(n.domain, n.op_type);
    if (!factory)
      throw Error(source, "op " + (n.domain.empty() ? "" : n.domain + ".") + n.op_type + " (" +
                              g.node_label(i) + ") is not supported by the runtime");
    KernelInit init{n, opset, g,
                    [&](const graph::Graph& sub) { return compile_plan(sub, opset, source); }};
    step.kernel = attribute_errors(source, [&] { return (*factory)(init); });
    plan->steps.push_back(std::move(step));
  }
  for (const auto& out : g.outputs) {
    if (!defined.count(out)) {
      plan->outer_slots.push_back(slot(out));
      defined.insert(out);
    }
    plan->output_slots.push_back(slot(out));
  }
  // Liveness: a slot dies after its last reading step (graph outputs and
  // constants never die; an unread node output dies right after its step).
  last_use.assign(plan->slot_names.size(), -1);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    for (int s : plan->steps[i].inputs)
      if (s >= 0) last_use[static_cast<size_t>(s)] = static_cast<int>(i);
    for (int s : implicit[i]) last_use[static_cast<size_t>(s)] = static_cast<int>(i);
    for (int s : plan->steps[i].outputs)
      if (s >= 0 && last_use[static_cast<size_t>(s)] < static_cast<int>(i))
        last_use[static_cast<size_t>(s)] = static_cast<int>(i);
  }
  std::set<int> keep(plan->output_slots.begin(), plan->output_slots.end());
  for (size_t s = 0; s < last_use.size(); ++s) {
    if (keep.count(static_cast<int>(s)) || plan->constants[s].defined() || last_use[s] < 0)
      continue;
    plan->steps[static_cast<size_t>(last_use[s])].release.push_back(static_cast<int>(s));
  }
  return plan;
}

std::vector<Tensor> run_plan(const Plan& plan, std::vector<Tensor> inputs, const Frame* parent,
                             Arena& arena) {
  Frame f;
  f.plan = &plan;
  f.parent = parent;
  // Constants are read in place from the plan (value_of), not copied per run.
  f.values.resize(plan.constants.size());
  for (int s : plan.outer_slots) {
    const std::string& name = plan.slot_names[static_cast<size_t>(s)];
    const Tensor* t = parent ? parent->lookup(name) : nullptr;
    if (!t) throw Error("graph '" + plan.graph->name + "'", "value '" + name + "' is not defined");
    f.values[static_cast<size_t>(s)] = *t;
  }
  for (size_t i = 0; i < plan.input_slots.size() && i < inputs.size(); ++i)
    f.values[static_cast<size_t>(plan.input_slots[i])] = std::move(inputs[i]);
  run_steps(f, 0, plan.steps.size(), arena);
  // The frame ends here: each output is moved out of it, but for a slot that
  // a later output names again (copied until its last mention).
  const std::vector<int>& outs = plan.output_slots;
  std::vector<Tensor> out;
  out.reserve(outs.size());
  for (auto it = outs.begin(); it != outs.end(); ++it) {
    Tensor& v = f.values[static_cast<size_t>(*it)];
    const bool again = std::find(it + 1, outs.end(), *it) != outs.end();
    if (!v.defined())
      out.push_back(plan.constants[static_cast<size_t>(*it)]);
    else
      out.push_back(again ? v : std::move(v));
  }
  return out;
}

void run_steps(Frame& f, size_t begin, size_t end, Arena& arena) {
  const Plan& plan = *f.plan;
  // One pair of argument vectors for every step (no allocation per node).
  std::vector<const Tensor*> in_buf;
  std::vector<Tensor> out_buf;
  // The node's label is built only when its kernel fails.
  auto run_step = [](const Plan::Step& step, OpContext& ctx) {
    try {
      step.kernel->run(ctx);
    } catch (const Error& e) {
      if (!e.source().empty()) throw;
      throw Error(step.node->label(), e.message());
    } catch (const std::bad_alloc&) {
      throw Error(step.node->label(), "out of memory");
    }
  };
  for (size_t k = begin; k < end && k < plan.steps.size(); ++k) {
    const Plan::Step& step = plan.steps[k];
    in_buf.clear();
    out_buf.clear();
    OpContext ctx{*step.node, plan.opset, std::move(in_buf), std::move(out_buf), &arena, &f};
    for (int s : step.inputs) {
      const Tensor* t = s < 0 ? nullptr : value_of(f, s);
      if (t && !t->defined())
        throw Error(step.node->label(),
                    "input '" + plan.slot_names[static_cast<size_t>(s)] + "' has no value");
      ctx.inputs.push_back(t);
    }
    ctx.outputs.resize(step.outputs.size());
    if (arena.op_profile) {
      const auto t0 = std::chrono::steady_clock::now();
      run_step(step, ctx);
      const double dt =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      auto& [ms, count] = (*arena.op_profile)[step.node->op_type];
      ms += dt;
      ++count;
      if (arena.node_profile) {
        auto& [node_ms, node_count] = (*arena.node_profile)[step.node->label()];
        node_ms += dt;
        ++node_count;
      }
    } else {
      run_step(step, ctx);
    }
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      if (step.outputs[o] < 0) continue;
      if (!ctx.outputs[o].defined())
        throw Error(step.node->label(), "output " + std::to_string(o) + " was not produced");
      f.values[static_cast<size_t>(step.outputs[o])] = std::move(ctx.outputs[o]);
    }
    in_buf = std::move(ctx.inputs);
    out_buf = std::move(ctx.outputs);
    for (int s : step.release) f.values[static_cast<size_t>(s)] = Tensor();
  }
}

Executor::Executor(graph::Model model, ExecutorOptions options) : model_(std::move(model)) {
  if (options.verify) graph::verify(model_);
  plan_ = compile_plan(model_.graph, model_.opset, model_.source.empty() ? "model" : model_.source);
  for (const std::string& in : model_.graph.inputs)
    input_types_.push_back(model_.graph.type_of(in));
}

Executor::~Executor() = default;

namespace {
/// Checks input `name` of declared type `vt` (null: undeclared) holding `t`
/// (defined) and makes it contiguous, but for a KV cache view
/// (runtime/kv_cache.h), kept as it is so that GroupQueryAttention appends to
/// its cache in place.
void check_input(const std::string& name, const graph::ValueType* vt, Tensor& t) {
  const auto who = [&] { return "input '" + name + "'"; };  // built only for an error
  if (vt) {
    if (vt->dtype && *vt->dtype != t.dtype())
      throw Error(who(), "dtype " + std::string(dtype_name(t.dtype())) + ", the model expects " +
                             std::string(dtype_name(*vt->dtype)));
    if (vt->shape) {
      bool ok = vt->shape->size() == t.rank();
      for (size_t d = 0; ok && d < t.rank(); ++d)
        ok = !(*vt->shape)[d].is_known() || (*vt->shape)[d].value == t.dim(d);
      if (!ok)
        throw Error(who(), "shape " + shape_to_string(t.shape()) + ", the model expects " +
                               graph::sym_shape_to_string(*vt->shape));
    }
  }
  if (!(t.is_contiguous() && t.is_aligned()) && !kv_cache_of(t)) t = t.contiguous();
}

/// `inputs` checked against `g`'s declared inputs, in graph-input order.
std::vector<Tensor> ordered_inputs(const graph::Graph& g,
                                   const std::map<std::string, Tensor>& inputs) {
  // Names the first given input the graph lacks. Needed only when the counts
  // differ or a graph input is missing: as many inputs as graph inputs, each
  // found, leave no room for another.
  auto refuse_unknown = [&] {
    for (const auto& [name, t] : inputs)
      if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
        throw Error("input '" + name + "'", "the model has no such input");
  };
  if (inputs.size() != g.inputs.size()) refuse_unknown();
  std::vector<Tensor> ordered;
  ordered.reserve(g.inputs.size());
  for (const auto& name : g.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end() || !it->second.defined()) {
      refuse_unknown();
      throw Error("input '" + name + "'", "missing");
    }
    ordered.push_back(it->second);
    check_input(name, g.type_of(name), ordered.back());
  }
  return ordered;
}
}  // namespace

std::map<std::string, Tensor> Executor::run(const std::map<std::string, Tensor>& inputs) {
  const graph::Graph& g = model_.graph;
  std::vector<Tensor> outs = run_plan(*plan_, ordered_inputs(g, inputs), nullptr, arena_);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[g.outputs[i]] = std::move(outs[i]);
  return result;
}

std::vector<Tensor> Executor::run_ordered(std::vector<Tensor> inputs) {
  const std::vector<std::string>& names = model_.graph.inputs;
  if (inputs.size() > names.size())
    throw Error("input " + std::to_string(names.size()),
                "the model has no such input (it takes " + std::to_string(names.size()) + ")");
  for (size_t i = 0; i < names.size(); ++i) {
    if (i >= inputs.size() || !inputs[i].defined())
      throw Error("input '" + names[i] + "'", "missing");
    check_input(names[i], input_types_[i], inputs[i]);
  }
  return run_plan(*plan_, std::move(inputs), nullptr, arena_);
}

CutRun::CutRun(const Executor& executor, const std::map<std::string, Tensor>& inputs)
    : executor_(&executor) {
  const Plan& plan = executor.plan();
  frame_.plan = &plan;
  frame_.values.resize(plan.constants.size());  // constants are read in place (value_of)
  const std::vector<Tensor> ordered = ordered_inputs(executor.model().graph, inputs);
  for (size_t i = 0; i < plan.input_slots.size() && i < ordered.size(); ++i)
    frame_.values[static_cast<size_t>(plan.input_slots[i])] = ordered[i];
}

size_t CutRun::steps() const {
  return frame_.plan->steps.size();
}

size_t CutRun::first_reader(const std::string& value) const {
  const Plan& plan = *frame_.plan;
  auto it = plan.slot_of.find(value);
  if (it == plan.slot_of.end())
    throw Error("value '" + value + "'", "the model has no such value in its main graph");
  for (size_t k = position_; k < plan.steps.size(); ++k) {
    const Plan::Step& step = plan.steps[k];
    if (std::find(step.inputs.begin(), step.inputs.end(), it->second) != step.inputs.end())
      return k;
    for (const auto& [name, a] : step.node->attributes)
      if (a.kind == graph::Attribute::Kind::g || a.kind == graph::Attribute::Kind::graphs)
        return k;  // a subgraph may read it from the outer scope
  }
  return plan.steps.size();
}

void CutRun::advance(size_t step) {
  if (step < position_)
    throw Error("cut run", "cannot move back from step " + std::to_string(position_) + " to " +
                               std::to_string(step));
  run_steps(frame_, position_, step, arena_);
  position_ = std::min(step, steps());
}

Tensor CutRun::value(const std::string& value) const {
  const Plan& plan = *frame_.plan;
  auto it = plan.slot_of.find(value);
  if (it == plan.slot_of.end())
    throw Error("value '" + value + "'", "the model has no such value in its main graph");
  const Tensor* t = value_of(frame_, it->second);
  if (!t || !t->defined())
    throw Error("value '" + value + "'",
                "not available at step " + std::to_string(position_) + " of the cut run");
  return *t;
}

namespace {

void replace_values(Frame& f, const std::map<std::string, Tensor>& values) {
  const Plan& plan = *f.plan;
  for (const auto& [name, t] : values) {
    auto it = plan.slot_of.find(name);
    if (it == plan.slot_of.end())
      throw Error("value '" + name + "'", "the model has no such value in its main graph");
    f.values[static_cast<size_t>(it->second)] = t;
  }
}

}  // namespace

void CutRun::replace(const std::map<std::string, Tensor>& values) {
  replace_values(frame_, values);
}

std::map<std::string, Tensor> CutRun::finish(const std::map<std::string, Tensor>& replaced) {
  const Plan& plan = *frame_.plan;
  Frame f = frame_;
  replace_values(f, replaced);
  run_steps(f, position_, plan.steps.size(), arena_);
  std::map<std::string, Tensor> result;
  const std::vector<std::string>& names = executor_->output_names();
  for (size_t i = 0; i < plan.output_slots.size(); ++i)
    result[names[i]] = *value_of(f, plan.output_slots[i]);
  return result;
}

}  // namespace tailor::runtime
