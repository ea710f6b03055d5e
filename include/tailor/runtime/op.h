// The op registry of the runtime: op type → kernel factory. A kernel is built
// once per node at load time (attributes parsed and checked, constant inputs
// such as weights prepared) and run once per execution of the node.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"

namespace tailor::runtime {

class Arena;
struct Plan;
struct Frame;

/// What a kernel sees when it runs: the node, its input tensors (nullptr for
/// an omitted optional input), the outputs it must set, and an allocator whose
/// buffers are reused once their values are dead.
struct OpContext {
  const graph::Node& node;
  int64_t opset;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> outputs;
  Arena* arena = nullptr;
  /// The frame the node runs in (for subgraphs reading outer-scope values).
  Frame* frame = nullptr;

  size_t num_inputs() const { return inputs.size(); }
  bool has(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  /// Input `i`; throws Error naming the node when it is absent.
  const Tensor& in(size_t i) const;
  /// A new contiguous tensor from the arena. Its contents are unspecified
  /// (a reused buffer): the kernel writes every element.
  Tensor alloc(DType dtype, Shape shape);
  /// Throws Error(node label, message).
  [[noreturn]] void fail(const std::string& message) const;
};

/// A node's prepared kernel.
class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Computes ctx.outputs from ctx.inputs. Throws Error naming the node for
  /// inputs the op cannot take (shapes, dtypes). CutRuns of one executor call
  /// it on several threads at once, with inputs of different shapes: state
  /// kept between runs is per thread, or read and written under a lock.
  virtual void run(OpContext& ctx) = 0;
};

/// What a kernel factory gets at load time.
struct KernelInit {
  const graph::Node& node;
  int64_t opset;
  const graph::Graph& graph;
  /// Compiles a subgraph of this node (If branches) into a Plan the kernel
  /// keeps; unsupported ops inside fail here, at load time.
  std::function<std::shared_ptr<Plan>(const graph::Graph&)> compile;

  /// The constant tensor feeding input `i` (an initializer of this graph), or
  /// nullptr when that input is computed at run time or absent.
  const Tensor* constant(size_t i) const;
  [[noreturn]] void fail(const std::string& message) const;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelInit&)>;

/// Registers `factory` for op `op_type` in `domain` ("" is the default ONNX
/// domain). A later registration replaces an earlier one.
void register_op(const std::string& domain, const std::string& op_type, KernelFactory factory);
/// The factory for (domain, op_type), or nullptr.
const KernelFactory* find_op(const std::string& domain, const std::string& op_type);
/// Every registered op as "domain:op" ("" domain written as "onnx"), sorted.
std::vector<std::string> registered_ops();

/// A kernel from a plain function (stateless ops).
std::unique_ptr<Kernel> make_kernel(std::function<void(OpContext&)> fn);

}  // namespace tailor::runtime
