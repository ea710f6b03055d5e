// Shape rules of tailor's own ops (domain ai.tailor; contracts in
// tailor/graph/fused_ops.h and src/runtime/ops_compressed.cpp):
// - FusedConv, FusedGemm, FusedMatMul: as Conv, Gemm, MatMul (the epilogue
//   keeps the shape);
// - LayerNormalization, Softmax, SqueezeExcite, RMSNormalization: the input's type (and
//   RMSNormalization's sum X + skip, its output 1, too);
// - Attention: Q's type (Y [b, h, r, d] as Q [b, h, r, d]);
// - GroupQueryAttention: Y as Q; the presents as the pasts, positions unknown;
// - FusedElementwise: the inputs' broadcast shape, input 0's dtype;
// - ConvNhwc: X [n, h, w, c_in], W [c_out, kh, kw, c_in/group] → [n, oh, ow, c_out];
// - CompressedLinear: X [..., in] → f32 [..., out];
// - CompressedConv: X [N, C, H, W] → f32 [N, out, OH, OW] (kernel_shape attribute);
//   out is the encoded weight's output channels.
#include "shape_rules.h"
#include "tailor/schemes/scheme.h"

namespace tailor::graph::shape_rules {
namespace {

std::vector<Info> fused_conv(const NodeContext& c) {
  const Info* x = c.in(0);
  const Info* w = c.in(1);
  Info o;
  if (x) o.dtype = x->dtype;
  if (!x || !x->shape || x->shape->size() < 3) return {o};
  const Dim channels = w && w->shape ? (*w->shape)[0] : Dim::unknown();
  o.shape = window_shape(c.node, *x->shape, channels, kernel_of(c.node, w, x->shape->size()), false,
                         c.who());
  return {o};
}

std::vector<Info> fused_gemm(const NodeContext& c) {
  Info o = c.same(0);
  o.shape = gemm_shape(c);
  return {o};
}

std::vector<Info> fused_matmul(const NodeContext& c) {
  Info o = c.same(0);
  o.shape = matmul_shape(c.in(0), c.in(1), c.who());
  return {o};
}

std::vector<Info> fused_elementwise(const NodeContext& c) {
  // Attribute "upsample" (fh, fw per input): input i read as its rank-4
  // value upsampled, its last two dims times fh and fw.
  const std::vector<int64_t> up = c.node.attr_ints("upsample", {});
  std::vector<Info> upsampled(c.node.inputs.size());
  std::vector<const Info*> ins;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const Info* x = c.in(i);
    if (x && 2 * i + 1 < up.size() && (up[2 * i] != 1 || up[2 * i + 1] != 1)) {
      upsampled[i] = *x;
      if (upsampled[i].shape && upsampled[i].shape->size() == 4)
        for (size_t k = 0; k < 2; ++k) {
          Dim& d = (*upsampled[i].shape)[2 + k];
          d = d.is_known() ? Dim::known(d.value * up[2 * i + k]) : Dim::unknown();
        }
      else
        upsampled[i].shape.reset();
      upsampled[i].value.reset();
      upsampled[i].constant = Tensor();
      x = &upsampled[i];
    }
    ins.push_back(x);
  }
  Info o = c.same(0);
  o.shape = bcast(ins, c.who());
  return {o};
}

std::vector<Info> group_query_attention(const NodeContext& c) {
  // Y as Q [S, H·d]; the presents [1, KV, P + S, d] as the pasts, their
  // position count unknown here.
  Info present = c.same(3);
  if (present.shape && present.shape->size() == 4) (*present.shape)[2] = Dim::unknown();
  return {c.same(0), present, present};
}

std::vector<Info> rms_normalization(const NodeContext& c) {
  if (c.node.outputs.size() > 1) return {c.same(0), c.same(0)};
  return {c.same(0)};
}

std::vector<Info> conv_nhwc(const NodeContext& c) {
  const Info* x = c.in(0);
  const Info* w = c.in(1);
  Info o = c.same(0);
  o.shape.reset();
  if (!x || !x->shape || x->shape->size() != 4) return {o};
  const SymShape& xs = *x->shape;
  std::vector<int64_t> ks = c.node.attr_ints("kernel_shape", {});
  Dim channels = Dim::unknown();
  if (w && w->shape && w->shape->size() == 4) {
    const SymShape& ws = *w->shape;
    channels = ws[0];
    if (ks.empty() && ws[1].is_known() && ws[2].is_known()) ks = {ws[1].value, ws[2].value};
  }
  const SymShape nchw =
      window_shape(c.node, SymShape{xs[0], xs[3], xs[1], xs[2]}, channels, ks, false, c.who());
  o.shape = SymShape{nchw[0], nchw[2], nchw[3], nchw[1]};
  return {o};
}

const schemes::Encoded* encoded_weight(const Node& n) {
  const Attribute* a = n.find("weight");
  return a && a->kind == Attribute::Kind::encoded ? a->encoded.get() : nullptr;
}

std::vector<Info> compressed_linear(const NodeContext& c) {
  Info o = c.same(0, DType::f32);
  if (o.shape && !o.shape->empty()) {
    const schemes::Encoded* w = encoded_weight(c.node);
    o.shape->back() = w ? Dim::known(w->out()) : Dim::unknown();
  }
  return {o};
}

std::vector<Info> compressed_conv(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o = c.same(0, DType::f32);
  if (!x || !x->shape || x->shape->size() < 3) {
    o.shape.reset();
    return {o};
  }
  const schemes::Encoded* w = encoded_weight(c.node);
  o.shape = window_shape(c.node, *x->shape, w ? Dim::known(w->out()) : Dim::unknown(),
                         c.node.attr_ints("kernel_shape", {}), false, c.who());
  return {o};
}

const RuleEntry kTailorRules[] = {
    {"ai.tailor", "FusedConv", fused_conv},
    {"ai.tailor", "FusedConvTranspose", window},
    {"ai.tailor", "FusedGemm", fused_gemm},
    {"ai.tailor", "FusedMatMul", fused_matmul},
    {"ai.tailor", "LayerNormalization", same_as_input},
    {"ai.tailor", "Softmax", same_as_input},
    {"ai.tailor", "SqueezeExcite", same_as_input},
    {"ai.tailor", "Attention", same_as_input},
    {"ai.tailor", "GroupQueryAttention", group_query_attention},
    {"ai.tailor", "RMSNormalization", rms_normalization},
    {"ai.tailor", "FusedElementwise", fused_elementwise},
    {"ai.tailor", "ConvNhwc", conv_nhwc},
    {"ai.tailor", "CompressedLinear", compressed_linear},
    {"ai.tailor", "CompressedConv", compressed_conv},
};

}  // namespace

std::span<const RuleEntry> tailor_rules() {
  return kTailorRules;
}

}  // namespace tailor::graph::shape_rules
