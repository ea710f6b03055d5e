#include "fuse_matmul_bias_activation.h"

#include "epilogue_activation.h"

namespace tailor::graph::passes {

std::optional<FusionMatch> match_matmul_bias_activation(const FusionScope& scope, size_t matmul) {
  const Node& mm = scope.g.nodes[matmul];
  if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
  const Tensor* b = scope.constant(mm.inputs[1]);
  if (!b || b->dtype() != DType::f32 || b->rank() != 2 || !scope.is_f32(mm.inputs[0]))
    return std::nullopt;
  FusionMatch m;
  m.kind = "matmul_epilogue";
  m.members = {matmul};
  Node f = make_node("FusedMatMul", "", {mm.inputs[0], mm.inputs[1]}, {}, "ai.tailor");
  const std::string& cur = mm.outputs[0];
  const auto r = scope.sole(cur);
  if (!r || !is_op(scope.g.nodes[*r], "Add")) return finish_epilogue(scope, std::move(m), f, cur);
  const Node& add = scope.g.nodes[*r];
  const auto o = other_input(add, cur, true);
  const Tensor* t = o ? scope.constant(*o) : nullptr;
  if (!t || t->dtype() != DType::f32 || t->rank() != 1 || t->numel() != b->dim(1))
    return finish_epilogue(scope, std::move(m), f, cur);
  f.inputs.push_back(*o);
  m.members.push_back(*r);
  return finish_epilogue(scope, std::move(m), std::move(f), add.outputs[0]);
}

}  // namespace tailor::graph::passes
