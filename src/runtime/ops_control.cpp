// Control flow: If (subgraphs run with the enclosing graph's values in scope).
#include "op_util.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelInit& init) {
    const auto* then_a = init.node.find("then_branch");
    const auto* else_a = init.node.find("else_branch");
    if (!then_a || !else_a || then_a->kind != graph::Attribute::Kind::g ||
        else_a->kind != graph::Attribute::Kind::g)
      init.fail("needs graph attributes then_branch and else_branch");
    then_ = init.compile(*then_a->g);
    else_ = init.compile(*else_a->g);
    const size_t n = init.node.outputs.size();
    if (then_->output_slots.size() != n || else_->output_slots.size() != n)
      init.fail("branches must produce " + std::to_string(n) + " outputs");
  }
  void run(OpContext& ctx) override {
    const Tensor& c = ctx.in(0);
    if (c.numel() != 1 || c.dtype() != DType::boolean) ctx.fail("condition must be one bool");
    const bool take = *reinterpret_cast<const uint8_t*>(c.contiguous().raw()) != 0;
    std::vector<Tensor> outs = run_plan(take ? *then_ : *else_, {}, ctx.frame, *ctx.arena);
    for (size_t i = 0; i < outs.size(); ++i) ctx.outputs[i] = std::move(outs[i]);
  }

 private:
  std::shared_ptr<Plan> then_, else_;
};

}  // namespace

void register_control_ops() {
  register_op("", "If", [](const KernelInit& init) { return std::make_unique<IfKernel>(init); });
}

void register_builtin_ops() {
  register_elementwise_ops();
  register_shape_ops();
  register_reduce_ops();
  register_control_ops();
  register_nn_ops();
  register_compressed_ops();
  register_fused_ops();
  register_decoder_ops();
  register_layout_ops();
}

}  // namespace tailor::runtime
