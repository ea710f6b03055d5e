#include "tailor/runtime/op.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "tailor/core/error.h"
#include "tailor/runtime/executor.h"

namespace tailor::runtime {

namespace {
std::map<std::pair<std::string, std::string>, KernelFactory>& registry() {
  static std::map<std::pair<std::string, std::string>, KernelFactory> r;
  return r;
}

class FnKernel final : public Kernel {
 public:
  explicit FnKernel(std::function<void(OpContext&)> fn) : fn_(std::move(fn)) {}
  void run(OpContext& ctx) override { fn_(ctx); }

 private:
  std::function<void(OpContext&)> fn_;
};
}  // namespace

void register_builtin_ops();  // ops_*.cpp, called once

const Tensor& OpContext::in(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

Tensor OpContext::alloc(DType dtype, Shape shape) {
  if (arena) return arena->alloc(dtype, std::move(shape));
  return Tensor::zeros(dtype, std::move(shape));
}

void OpContext::fail(const std::string& message) const {
  throw Error(node.label(), message);
}

const Tensor* KernelInit::constant(size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
  auto it = graph.initializers.find(node.inputs[i]);
  return it == graph.initializers.end() ? nullptr : &it->second;
}

void KernelInit::fail(const std::string& message) const {
  throw Error(node.label(), message);
}

void register_op(const std::string& domain, const std::string& op_type, KernelFactory factory) {
  registry()[{domain, op_type}] = std::move(factory);
}

const KernelFactory* find_op(const std::string& domain, const std::string& op_type) {
  static std::once_flag once;
  std::call_once(once, register_builtin_ops);
  auto& r = registry();
  auto it = r.find({domain, op_type});
  return it == r.end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  find_op("", "");
  std::vector<std::string> out;
  for (const auto& [k, v] : registry())
    out.push_back((k.first.empty() ? "onnx" : k.first) + ":" + k.second);
  return out;
}

std::unique_ptr<Kernel> make_kernel(std::function<void(OpContext&)> fn) {
  return std::make_unique<FnKernel>(std::move(fn));
}

}  // namespace tailor::runtime
