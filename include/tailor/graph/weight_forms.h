// The standard-ONNX form of a compressed weight: the scheme's stored factors
// written verbatim as initializers and the standard operators that compute the
// weight from them (DESIGN.md, "Files written"). One function writes the form
// (tailor compress) and regenerates it to recognise it (the `compressed` pass),
// so what tailor writes is exactly what tailor runs compressed.
//
// Forms, all over the default domain at any opset from 9 (no BitShift,
// DequantizeLinear or INT4: the PaddleOCR models are opset 9 and 11), Ŵ [out, in]
// then reshaped / transposed / cast to the weight's stored shape, layout and dtype:
//   int8                 Mul(Cast(q i8 [out, in]), Cast(scale f16 [out, 1]))
//   int4, int3, ternary, int4-g{G}
//                        the codes' bitstream (u8, LSB first, kernels.h) cast to f32 in
//                        chunks of K bytes (K·8 = lcm(bits, 8)), combined by MatMul with
//                        [1, 256, 65536] into an integer below 2^24, split into codes by
//                        Div / Floor / Mul / Sub by powers of two (exact in f32), made
//                        signed, times the scales (grouped: [out, ng, 1] tiled over G)
//   sparse-2:4           values [out, G, 2] times one-hot rows of their 2-bit positions
//                        (Equal with [0, 1, 2, 3]), the two kept values of a group added
//   lowrank-r{R}         MatMul(A, B)
//   monarch              Mul(Unsqueeze(Transpose(L)), Unsqueeze(R)) reshaped [m², m²]
//   tt                   the cores chained by MatMul over their bonds, axes reordered
//   tucker               MatMul(U0, MatMul(U1, MatMul(core, U2ᵀ))) (no U2 for a conv kernel)
//   int8-a8              around each reader (emit_w8a8): the reader on Cast(q) and on its
//                        input rounded to integer-valued codes per row, scaled after
// Factor initializers are named "<weight>.<factor>" ("q", "scale", "values", "A",
// "L", "G1", "core", "U0", ...; sparse-2:4's positions are "<weight>.q").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"
#include "tailor/schemes/scheme.h"

namespace tailor::graph {

/// Where a form's nodes and initializers go.
class FormSink {
 public:
  virtual ~FormSink() = default;
  /// A value or node name starting with `base` not used so far.
  virtual std::string fresh(const std::string& base) = 0;
  /// Adds initializer `t` under fresh(base); returns its name.
  virtual std::string constant(const std::string& base, Tensor t) = 0;
  /// Appends a node; nodes come in emission order (topological).
  virtual void emit(Node n) = 0;
  /// Opset of the default domain (Unsqueeze and Slice forms depend on it).
  virtual int64_t opset() const = 0;
};

/// How a weight is stored in the model: its name, layout, shape and dtype.
struct StoredWeight {
  std::string name;
  WeightLayout layout = WeightLayout::none;
  Shape shape;
  DType dtype = DType::f32;
};

/// Whether `label` has a standard form (every catalog label but "dense").
bool has_weight_form(const std::string& label);

/// Emits the form of `e` defining the value `w.name` (see the file comment).
/// Sets `form` to a short description; returns the bytes of the factor
/// initializers (the scheme's stored bytes). Throws tailor::Error naming the
/// weight when the label has no form or the stored shape does not hold
/// e.out()·e.in() elements.
int64_t emit_weight_form(FormSink& sink, const StoredWeight& w, const schemes::Encoded& e,
                         std::string& form);

/// Most inputs emit_w8a8 sums in one f32 product: every partial sum of its
/// integer codes' products is below 127²·1040 < 2^24, hence exact.
constexpr int64_t kW8A8ChunkIn = 1040;

/// Most inputs of an int8-a8 layer (c_in·kh·kw of a Conv, in of a matrix):
/// the runtime's W8A8 kernels sum the shifted codes in int32, |Σ| ≤
/// 65535·255·128 < 2^31 (kernels::kQ8Q8Conv1x1MaxIn is the same bound), and
/// the file adds its chunks' sums in int32, |Σ| ≤ 65535·127² < 2^31.
constexpr int64_t kW8A8MaxIn = 65535;

/// Whether emit_w8a8 takes `reader` (its weight, of stored shape `weight`, as
/// input 1): a 2-D Conv of groups 1 without auto_pad, of at most kW8A8ChunkIn
/// taps and kW8A8MaxIn inputs (channels × taps); a MatMul of a 2-D weight, or
/// a Gemm with transA 0 and alpha = beta = 1, of at most kW8A8MaxIn inputs.
/// Where a weight has another reader, int8-a8 is no candidate for it.
bool w8a8_reader(const Node& reader, const Shape& weight);

/// int8-a8 (W8A8) in standard operators, opset 9 on, computing exactly what
/// schemes::kernels::q8_q8_gemm_ref (and the runtime's q8_q8_conv1x1
/// kernels) compute, for `reader` (a 1×1 Conv of stride 1, unpadded, groups
/// 1; a MatMul; a Gemm with transA 0 and alpha = beta = 1) of weight `w`
/// (stored f32) holding `e` (int8 codes q i8 [out, in], scales f16 [out]):
///   rows of X (reader input 0; the channels of a pixel, axis 1, for the
///   Conv; the last axis otherwise): s = ReduceMax(Abs(X))/127 (keepdims),
///   r = Clip(Floor(Abs(X) / Where(s > 0, s, 1) + 0.5), 0, 127) (= |t|'s
///   rounding, t = X / s: division rounds symmetrically), qx = Where(X < 0,
///   Neg(r), r);
///   W = Cast(q) to f32 in w's stored shape and layout, named w.name;
///   A = reader(qx, W) without its bias (a Gemm's C a zero [1]: opset 9
///   needs one): integer-valued f32 sums, exact in
///   any order for in ≤ kW8A8ChunkIn; past it, one reader per chunk of
///   kW8A8ChunkIn inputs on qx·mask (1 on the chunk, 0 elsewhere; [in, 1, 1]
///   for the Conv, [in] otherwise), each Cast to int32, added in order, Cast
///   to f32 (the exact sum rounded once, as the kernels);
///   Y = A·(s·Cast(scale)) (scale [out, 1] reshaped to [out, 1, 1] for the
///   Conv, [out] otherwise), then + bias (the Conv's reshaped to [out, 1, 1])
///   when the reader has one, defining reader.outputs[0].
/// Any other Conv of groups 1 (a k×k kernel, strides, pads, dilations: the
/// runtime's q8_q8_conv kernels, runtime/kernels/registry.h Q8Q8ConvParams)
/// rounds each image with one scale (ReduceMax over axes 1, 2, 3: an
/// im2row row mixes pixels, so per-pixel scales would not factor out of its
/// sums), and its chunks are kW8A8ChunkIn / (kh·kw) input channels (mask
/// [C, 1, 1]), each chunk's sums running over the taps; kernels of more than
/// kW8A8ChunkIn taps are refused.
/// The initializers are "<w.name>.q" and "<w.name>.scale" (the int8 form's);
/// `bytes` is set to their size. Throws tailor::Error naming w.name for
/// another reader, label or stored dtype. The one emitter
/// of the form: tailor compress writes it and the `compressed` pass
/// regenerates it to recognise it.
void emit_w8a8(FormSink& sink, const Node& reader, const StoredWeight& w, const schemes::Encoded& e,
               int64_t& bytes);

/// The ai.tailor CompressedLinear / CompressedConv node that runs `n` (a
/// MatMul, Gemm or Conv of `g` reading its weight, of layout `layout` and
/// stored shape `s`, as input 1) on `w` instead, with n's name, input 0,
/// bias and outputs; std::nullopt when n does not fit those ops (Gemm with
/// transA, alpha or beta ≠ 1, or a bias that is not an f32 initializer of g
/// with w->out() values; Conv not 4-D, grouped or with auto_pad). The one
/// rule recognise_compressed_weights and the profiler's latency measurement
/// share.
std::optional<Node> compressed_op(const Graph& g, const Node& n, WeightLayout layout,
                                  const Shape& s, std::shared_ptr<const schemes::Encoded> w);

}  // namespace tailor::graph
