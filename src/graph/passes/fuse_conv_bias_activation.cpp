#include "fuse_conv_bias_activation.h"

#include "epilogue_activation.h"

namespace tailor::graph::passes {
namespace {

/// True when `t` can be added to the output of a conv with `c_out` channels
/// and `spatial` spatial dims as a per-channel bias (or one value).
bool is_channel_bias(const Tensor& t, int64_t c_out, size_t spatial) {
  if (t.dtype() != DType::f32) return false;
  if (t.numel() != c_out && t.numel() != 1) return false;
  if (t.numel() == c_out && c_out > 1)
    return (t.rank() == spatial + 1 && t.dim(0) == c_out) ||
           (t.rank() == spatial + 2 && t.dim(0) == 1 && t.dim(1) == c_out);
  return t.rank() <= spatial + 2;
}

}  // namespace

std::optional<FusionMatch> match_conv_bias_activation(const FusionScope& scope, size_t conv) {
  const Node& n = scope.g.nodes[conv];
  if (n.domain == "ai.tailor" && n.op_type == "CompressedConv" && n.outputs.size() == 1 &&
      n.find("activation") == nullptr) {
    // Its bias is an input already: only an activation joins its epilogue.
    FusionMatch m;
    m.kind = "conv_epilogue";
    m.members = {conv};
    return finish_epilogue(scope, std::move(m), n, n.outputs[0]);
  }
  if (!is_op(n, "Conv") || n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
  const Tensor* w = scope.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::f32 || (w->rank() != 3 && w->rank() != 4)) return std::nullopt;
  const int64_t c_out = w->dim(0);
  const bool has_b = n.inputs.size() > 2 && !n.inputs[2].empty();
  const Tensor* b = has_b ? scope.constant(n.inputs[2]) : nullptr;
  if (has_b && (!b || b->dtype() != DType::f32 || b->numel() != c_out)) return std::nullopt;
  FusionMatch m;
  m.kind = "conv_epilogue";
  m.members = {conv};
  std::string cur = n.outputs[0];
  Node f = n;
  f.op_type = "FusedConv";
  f.domain = "ai.tailor";
  const auto r = scope.sole(cur);
  if (!r || !is_op(scope.g.nodes[*r], "Add")) return finish_epilogue(scope, std::move(m), f, cur);
  const Node& add = scope.g.nodes[*r];
  const auto o = other_input(add, cur, true);
  const Tensor* t = o ? scope.constant(*o) : nullptr;
  if (!t || !is_channel_bias(*t, c_out, w->rank() - 2))
    return finish_epilogue(scope, std::move(m), f, cur);
  const std::vector<float> add_v = t->to_f32_vector();
  const std::vector<float> b0 =
      b ? b->to_f32_vector() : std::vector<float>(static_cast<size_t>(c_out), 0.f);
  std::vector<float> nb(static_cast<size_t>(c_out));
  for (size_t c = 0; c < nb.size(); ++c) nb[c] = b0[c] + add_v[add_v.size() == 1 ? 0 : c];
  const std::string bname = scope.names.fresh(add.outputs[0] + "_bias");
  m.inits.emplace_back(bname, Tensor::from_f32({c_out}, nb));
  f.inputs.resize(3);
  f.inputs[2] = bname;
  m.members.push_back(*r);
  return finish_epilogue(scope, std::move(m), std::move(f), add.outputs[0]);
}

std::optional<FusionMatch> match_conv_transpose_bias_activation(const FusionScope& scope,
                                                                size_t conv) {
  const Node& n = scope.g.nodes[conv];
  if (!is_op(n, "ConvTranspose") || n.inputs.size() < 2 || n.outputs.size() != 1)
    return std::nullopt;
  const Tensor* w = scope.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::f32 || w->rank() != 4) return std::nullopt;
  const int64_t c_out = w->dim(1) * n.attr_int("group", 1);
  const bool has_b = n.inputs.size() > 2 && !n.inputs[2].empty();
  const Tensor* b = has_b ? scope.constant(n.inputs[2]) : nullptr;
  if (has_b && (!b || b->dtype() != DType::f32 || b->numel() != c_out)) return std::nullopt;
  FusionMatch m;
  m.kind = "conv_transpose_epilogue";
  m.members = {conv};
  Node f = n;
  f.op_type = "FusedConvTranspose";
  f.domain = "ai.tailor";
  return finish_epilogue(scope, std::move(m), std::move(f), n.outputs[0]);
}

}  // namespace tailor::graph::passes
