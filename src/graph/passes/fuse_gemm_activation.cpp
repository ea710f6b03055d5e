#include "fuse_gemm_activation.h"

#include "epilogue_activation.h"

namespace tailor::graph::passes {

std::optional<FusionMatch> match_gemm_activation(const FusionScope& scope, size_t gemm) {
  const Node& n = scope.g.nodes[gemm];
  if (!is_op(n, "Gemm") || n.outputs.size() != 1) return std::nullopt;
  const auto a = match_activation(scope, n.outputs[0]);
  if (!a || a->nodes.size() != 1) return std::nullopt;
  FusionMatch m;
  m.kind = "gemm_epilogue";
  m.members = {gemm, a->nodes[0]};
  m.fused = n;
  m.fused.op_type = "FusedGemm";
  m.fused.domain = "ai.tailor";
  set_activation(m.fused, *a, "activation_alpha", "activation_beta");
  m.fused.outputs = {a->out};
  return m;
}

}  // namespace tailor::graph::passes
