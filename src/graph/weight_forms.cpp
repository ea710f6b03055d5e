// The standard-ONNX forms of compressed weights (weight_forms.h).
#include "tailor/graph/weight_forms.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "tailor/core/error.h"
#include "tailor/core/onnx_dtype.h"
#include "tailor/schemes/composite.h"
#include "tailor/schemes/kernels.h"
#include "tailor/schemes/registry.h"

namespace tailor::graph {
namespace {

int64_t bytes_of(const Tensor& t) {
  return static_cast<int64_t>(t.nbytes());
}

/// Small helpers emitting one node into the weight nodes and returning its output.
struct Emit {
  FormSink& ed;
  std::string base;

  std::string op(const std::string& type, std::vector<std::string> inputs,
                 std::vector<std::pair<std::string, Attribute>> attrs = {}, std::string out = "") {
    if (out.empty()) out = ed.fresh(base + "." + type);
    Node n;
    n.op_type = type;
    n.name = ed.fresh(base + "/" + type);
    n.inputs = std::move(inputs);
    n.outputs = {out};
    for (auto& [k, a] : attrs) n.set(k, std::move(a));
    ed.emit(std::move(n));
    return out;
  }
  std::string cast(const std::string& x, DType to, std::string out = "") {
    return op("Cast", {x}, {{"to", Attribute::of_int(onnx_of_dtype(to))}}, std::move(out));
  }
  std::string cast_f32(const std::string& x) { return cast(x, DType::f32); }
  std::string ints(const std::vector<int64_t>& v) {
    Tensor t = Tensor::zeros(DType::i64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    return ed.constant(base + ".i", std::move(t));
  }
  std::string reshape(const std::string& x, const std::vector<int64_t>& shape,
                      std::string out = "") {
    return op("Reshape", {x, ints(shape)}, {}, std::move(out));
  }
  std::string transpose(const std::string& x, std::vector<int64_t> perm, std::string out = "") {
    return op("Transpose", {x}, {{"perm", Attribute::of_ints(std::move(perm))}}, std::move(out));
  }
  std::string unsqueeze(const std::string& x, std::vector<int64_t> axes) {
    if (ed.opset() >= 13) return op("Unsqueeze", {x, ints(axes)});
    return op("Unsqueeze", {x}, {{"axes", Attribute::of_ints(std::move(axes))}});
  }
  std::string slice(const std::string& x, int64_t axis, int64_t start, int64_t end) {
    if (ed.opset() >= 10) return op("Slice", {x, ints({start}), ints({end}), ints({axis})});
    return op("Slice", {x},
              {{"starts", Attribute::of_ints({start})},
               {"ends", Attribute::of_ints({end})},
               {"axes", Attribute::of_ints({axis})}});
  }
  std::string constant(const std::string& suffix, Tensor t) {
    return ed.constant(base + "." + suffix, std::move(t));
  }
  std::string floats(const Shape& s, std::vector<float> v) {
    return ed.constant(base + ".c", Tensor::from_f32(s, v));
  }
  /// x − m·Floor(x / m): x mod m for non-negative integers m a power of two (exact in f32).
  std::string mod(const std::string& x, float m) {
    const std::string fl = op("Floor", {op("Div", {x, floats({1}, {m})})});
    return op("Sub", {x, op("Mul", {fl, floats({1}, {m})})});
  }
};

/// Codes [count] (f32 values) of `stream` (u8, `bits` bits per code, LSB first,
/// as kernels::PackedGemmArgs describes), written verbatim. K bytes hold C codes
/// (K·8 = lcm(bits, 8)): the bytes are combined into an integer below 2^24
/// (exact in f32) and each code taken by Div / Floor / Mul / Sub by powers of two.
std::string emit_codes(Emit& e, const Tensor& stream, int64_t count, int bits, bool is_signed) {
  const std::string s = e.cast_f32(e.constant("q", stream));
  const int64_t nb = stream.numel();
  const int64_t lcm = std::lcm<int64_t>(bits, 8), k = lcm / 8, c = lcm / bits;
  const int64_t chunks = (nb + k - 1) / k;
  std::string v = s;
  if (chunks * k != nb) {
    const std::string pad = e.floats({chunks * k - nb}, std::vector<float>(chunks * k - nb, 0.0f));
    v = e.op("Concat", {s, pad}, {{"axis", Attribute::of_int(0)}});
  }
  v = e.reshape(v, {chunks, k});
  if (k > 1) {
    std::vector<float> w(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) w[i] = static_cast<float>(int64_t{1} << (8 * i));
    v = e.op("MatMul", {v, e.floats({k, 1}, w)});  // [chunks, 1]
  }
  std::vector<float> div(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) div[i] = static_cast<float>(int64_t{1} << (bits * i));
  const std::string shifted = e.op("Floor", {e.op("Div", {v, e.floats({1, c}, div)})});
  std::string u = e.mod(shifted, static_cast<float>(1 << bits));  // [chunks, C] unsigned
  if (is_signed) {
    // Two's complement: u − 2^bits·floor(u / 2^(bits−1)).
    const std::string neg =
        e.op("Floor", {e.op("Div", {u, e.floats({1}, {float(1 << (bits - 1))})})});
    u = e.op("Sub", {u, e.op("Mul", {neg, e.floats({1}, {float(1 << bits)})})});
  }
  u = e.reshape(u, {chunks * c});
  if (chunks * c != count) u = e.slice(u, 0, 0, count);
  return u;
}

int quantized_bits(const std::string& label) {
  if (label == "int8" || label == "q8_0") return 8;
  if (label == "int3") return 3;
  if (label == "ternary") return 2;
  return 4;  // int4, int4-g{G}, q4_0
}

/// Ŵ [out, in] = q·s: codes unpacked (int8: Cast of the i8 [out, in] codes),
/// scales f16 cast to f32 (grouped ones tiled over their group).
std::string emit_quantized(Emit& e, const schemes::Encoded& enc, int64_t& bytes,
                           std::string& form) {
  const int64_t out = enc.out(), in = enc.in();
  const std::string label = schemes::stored_form(enc.label());  // -mse, -gptq: the reference's
  const Tensor& q = enc.factor("q");
  const Tensor& scale = enc.factor("scale");
  const int bits = quantized_bits(label);
  std::string codes;
  if (bits == 8) {
    codes = e.cast_f32(e.constant("q", q.reshape({out, in})));
    form = "Cast·Mul (int8 codes)";
  } else {
    codes = e.reshape(emit_codes(e, q, out * in, bits, true), {out, in});
    form = fmt::format("Cast·Mul ({}-bit codes packed)", bits);
  }
  bytes = bytes_of(q) + bytes_of(scale);
  std::string s;
  if (scale.rank() == 1) {
    s = e.cast_f32(e.constant("scale", scale.reshape({out, 1})));
  } else {
    const int64_t ng = scale.dim(1), group = (in + ng - 1) / ng;
    const int64_t g = label.rfind("int4-g", 0) == 0 ? std::stoll(label.substr(6)) : group;
    s = e.cast_f32(e.constant("scale", scale.reshape({out, ng, 1})));
    s = e.op("Tile", {s, e.ints({1, 1, g})});
    s = e.reshape(s, {out, ng * g});
    if (ng * g != in) s = e.slice(s, 1, 0, in);
  }
  return e.op("Mul", {codes, s});
}

/// Ŵ of sparse-2:4: the kept values [out, G, 2] (G groups of 4 per row; a row
/// keeping an odd count gets one zero appended) scattered by their 2-bit
/// positions as one-hot rows: Σ_t value_t·(position_t == [0, 1, 2, 3]).
std::string emit_sparse24(Emit& e, const schemes::Encoded& enc, int64_t& bytes) {
  const int64_t out = enc.out(), in = enc.in();
  const int64_t kept = schemes::kernels::sparse24_kept_per_row(in), groups = (in + 3) / 4;
  const Tensor& values = enc.factor("values");
  const Tensor& indices = enc.factor("indices");
  bytes = bytes_of(values) + bytes_of(indices);
  std::string v = e.constant("values", values.reshape({out, kept}));
  std::string p = e.reshape(emit_codes(e, indices, out * kept, 2, false), {out, kept});
  if (kept != 2 * groups) {  // in mod 4 == 1: one value in the last group
    const std::string zero = e.floats({out, 1}, std::vector<float>(static_cast<size_t>(out), 0.0f));
    v = e.op("Concat", {v, zero}, {{"axis", Attribute::of_int(1)}});
    p = e.op("Concat", {p, zero}, {{"axis", Attribute::of_int(1)}});
  }
  v = e.reshape(v, {out, groups, 2, 1});
  p = e.reshape(p, {out, groups, 2, 1});
  // Equal on integers (opset 7–10 Equal takes no floats).
  const std::string hot = e.cast_f32(e.op("Equal", {e.cast(p, DType::i64), e.ints({0, 1, 2, 3})}));
  const std::string placed = e.op("Mul", {v, hot});  // [out, G, 2, 4]
  std::string w = e.op("Add", {e.slice(placed, 2, 0, 1), e.slice(placed, 2, 1, 2)});
  w = e.reshape(w, {out, 4 * groups});
  if (4 * groups != in) w = e.slice(w, 1, 0, in);
  return w;
}

/// Ŵ[l·m + s, ri·m + j] = L[ri, j, l]·R[l, s, ri]: L as [l, 1, ri, j] times R
/// as [l, s, ri, 1], reshaped [m², m²].
std::string emit_monarch(Emit& e, const schemes::Encoded& enc, int64_t& bytes) {
  const Tensor& l = enc.factor("L");
  const Tensor& r = enc.factor("R");
  const int64_t m = l.dim(0);
  bytes = bytes_of(l) + bytes_of(r);
  const std::string lt = e.unsqueeze(e.transpose(e.constant("L", l), {2, 0, 1}), {1});
  const std::string rt = e.unsqueeze(e.constant("R", r), {3});
  return e.reshape(e.op("Mul", {lt, rt}), {m * m, m * m});
}

/// Ŵ of tt: the cores G_k [r_{k−1}, o_k, i_k, r_k] chained over their bonds by
/// MatMul into [(o_1 i_1 … o_d i_d), 1], then the axes reordered to
/// (o_1 … o_d, i_1 … i_d).
std::string emit_tt(Emit& e, const schemes::Encoded& enc, int64_t& bytes) {
  const auto& f = enc.factors();
  std::vector<int64_t> dims;
  std::string m;
  int64_t rows = 1;
  bytes = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    const Tensor& g = f[k].tensor;  // [r0, o, i, r1]
    bytes += bytes_of(g);
    dims.push_back(g.dim(1));
    dims.push_back(g.dim(2));
    const std::string gk = e.constant(f[k].name, g);
    const int64_t r0 = g.dim(0), mode = g.dim(1) * g.dim(2), r1 = g.dim(3);
    if (k == 0) {
      m = e.reshape(gk, {mode, r1});
    } else {
      m = e.op("MatMul", {m, e.reshape(gk, {r0, mode * r1})});  // [rows, mode·r1]
      m = e.reshape(m, {rows * mode, r1});
    }
    rows *= mode;
  }
  std::vector<int64_t> perm;
  const int64_t d = static_cast<int64_t>(f.size());
  for (int64_t k = 0; k < d; ++k) perm.push_back(2 * k);
  for (int64_t k = 0; k < d; ++k) perm.push_back(2 * k + 1);
  const std::string t = e.transpose(e.reshape(m, dims), perm);
  return e.reshape(t, {enc.out(), enc.in()});
}

/// Ŵ[a, (b, c)] = Σ core[p, q, t]·U0[a, p]·U1[b, q]·U2[c, t] (U2 absent for a
/// conv kernel: mode 2 is kh·kw, kept): core·U2ᵀ, U1·(…), U0·(…) by MatMul.
std::string emit_tucker(Emit& e, const schemes::Encoded& enc, int64_t& bytes) {
  const Tensor& core = enc.factor("core");
  const Tensor& u0 = enc.factor("U0");
  const Tensor& u1 = enc.factor("U1");
  bytes = bytes_of(core) + bytes_of(u0) + bytes_of(u1);
  std::string t = e.constant("core", core);  // [r0, r1, r2]
  int64_t d2 = core.dim(2);
  for (const schemes::Factor& f : enc.factors())
    if (f.name == "U2") {
      bytes += bytes_of(f.tensor);
      d2 = f.tensor.dim(0);
      t = e.op("MatMul", {t, e.transpose(e.constant("U2", f.tensor), {1, 0})});  // [r0, r1, d2]
    }
  t = e.op("MatMul", {e.constant("U1", u1), t});  // [r0, d1, d2]
  t = e.reshape(t, {core.dim(0), u1.dim(0) * d2});
  return e.op("MatMul", {e.constant("U0", u0), t});  // [d0, d1·d2]
}

/// Ŵ [out, in] (value `w`) to the weight's stored shape, layout and dtype;
/// the last node defines `sw.name`.
void finish(Emit& e, const std::string& w, const StoredWeight& sw) {
  const Shape& s = sw.shape;
  const bool cast = sw.dtype != DType::f32;
  const std::string shaped = cast ? "" : sw.name;
  std::string v;
  if (sw.layout == WeightLayout::in_out) {
    v = e.transpose(w, {1, 0}, shaped);
  } else if (sw.layout == WeightLayout::conv_transpose) {
    Shape swapped = s;
    std::swap(swapped[0], swapped[1]);
    std::vector<int64_t> perm(s.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::swap(perm[0], perm[1]);
    v = e.transpose(e.reshape(w, swapped), perm, shaped);
  } else {
    v = e.reshape(w, s, shaped);
  }
  if (cast) e.cast(v, sw.dtype, sw.name);
}

/// One part of a composite as an f32 value [rows, cols]: Cast of an f16
/// factor ("f16", factor "w"), or a quantized part's Cast·Mul.
std::string emit_part(FormSink& sink, const std::string& base, const schemes::Encoded& part,
                      int64_t& bytes) {
  Emit e{sink, base};
  if (part.label() == "f16") {
    const Tensor& w = part.factor("w");
    bytes += bytes_of(w);
    return e.cast_f32(e.constant("w", w));
  }
  int64_t b = 0;
  std::string form;
  const std::string v = emit_quantized(e, part, b, form);
  bytes += b;
  return v;
}

/// A composite Ŵ = base + A·B (schemes/composite.h): its parts dequantized,
/// MatMul(A, B), Add.
std::string emit_composite(Emit& e, const schemes::CompositeParts& parts, int64_t& bytes,
                           std::string& form) {
  const std::string a = emit_part(e.ed, e.base + ".A", *parts.a, bytes);
  const std::string b = emit_part(e.ed, e.base + ".B", *parts.b, bytes);
  std::string w = e.op("MatMul", {a, b});
  form = "MatMul(A, B) as the weight";
  if (parts.base) {
    std::string base_form;
    int64_t b0 = 0;
    const std::string q = emit_quantized(e, *parts.base, b0, base_form);
    bytes += b0;
    w = e.op("Add", {q, w});
    form = base_form + " + MatMul(A, B), as the weight";
  }
  return w;
}

}  // namespace

bool has_weight_form(const std::string& label_in) {
  const std::string label = schemes::stored_form(label_in);
  if (label.rfind("lowrank-q", 0) == 0 || label.find("+r") != std::string::npos)
    return true;  // composites (schemes/composite.h)
  return label == "int8" || label == "int4" || label == "int3" || label == "ternary" ||
         label.rfind("int4-g", 0) == 0 || label == "q8_0" || label == "q4_0" ||
         label == "sparse-2:4" || label == "monarch" || label == "tt" || label == "tucker" ||
         label.rfind("lowrank-r", 0) == 0;
}

int64_t emit_weight_form(FormSink& sink, const StoredWeight& sw, const schemes::Encoded& enc,
                         std::string& form) {
  const std::string label = enc.label();
  if (!has_weight_form(label)) throw Error(sw.name, "scheme '" + label + "' has no standard form");
  if (shape_numel(sw.shape) != enc.out() * enc.in())
    throw Error(sw.name, fmt::format("stored shape {} does not hold [{}, {}]",
                                     shape_to_string(sw.shape), enc.out(), enc.in()));
  Emit e{sink, sw.name};
  int64_t bytes = 0;
  std::string w;
  if (const auto parts = schemes::composite_parts(enc)) {
    w = emit_composite(e, *parts, bytes, form);
  } else if (label == "sparse-2:4") {
    w = emit_sparse24(e, enc, bytes);
    form = "values·one-hot of 2-bit positions";
  } else if (label == "monarch") {
    w = emit_monarch(e, enc, bytes);
    form = "Mul(L, R) as the weight";
  } else if (label == "tt") {
    w = emit_tt(e, enc, bytes);
    form = "MatMul chain of the TT cores as the weight";
  } else if (label == "tucker") {
    w = emit_tucker(e, enc, bytes);
    form = "MatMul(U0, U1, core, U2) as the weight";
  } else if (label.rfind("lowrank-r", 0) == 0) {
    const Tensor& a = enc.factor("A");
    const Tensor& b = enc.factor("B");
    bytes = static_cast<int64_t>(a.nbytes() + b.nbytes());
    w = e.op("MatMul", {e.constant("A", a), e.constant("B", b)});
    form = "MatMul(A, B) as the weight";
  } else {
    w = emit_quantized(e, enc, bytes, form);
  }
  finish(e, w, sw);
  return bytes;
}

}  // namespace tailor::graph

namespace tailor::graph {
namespace {

/// int8-a8's activation rounding (schemes::kernels::q8_q8_gemm_ref's f32
/// operations) of each row of `x` along `axes` (one axis: a row; 1, 2, 3: an
/// image): the codes q (integer-valued f32) and the rows' scales s (keepdims).
std::pair<std::string, std::string> emit_row_rounding(Emit& e, const std::string& x,
                                                      const std::vector<int64_t>& axes) {
  const std::string a = e.op("Abs", {x});
  const auto reduce = [&](const char* op, const std::string& v, int64_t axes_input_from) {
    return e.ed.opset() >= axes_input_from
               ? e.op(op, {v, e.ints(axes)}, {{"keepdims", Attribute::of_int(1)}})
               : e.op(op, {v},
                      {{"axes", Attribute::of_ints(axes)}, {"keepdims", Attribute::of_int(1)}});
  };
  // max |x| + Σ x·0: the sum is ±0 where every value is finite and NaN where
  // one is NaN or ±Inf, so such a row's (image's) scale and every output are
  // NaN, as in the kernels (ReduceMax alone may pass over a NaN).
  const std::string m =
      e.op("Add", {reduce("ReduceMax", a, 18),
                   reduce("ReduceSum", e.op("Mul", {x, e.floats({1}, {0.0f})}), 13)});
  const std::string s = e.op("Div", {m, e.floats({1}, {127.0f})});
  // A zero row divides by 1: its codes are 0 either way.
  const std::string nonzero = e.op("Greater", {s, e.floats({1}, {0.0f})});
  // round_half_away(t) clamped to ±127, t = x / s: ±min(Floor(|t| + 0.5), 127),
  // |t| = |x| / s exactly (division rounds symmetrically), the sign of x.
  const std::string abs_t = e.op("Div", {a, e.op("Where", {nonzero, s, e.floats({1}, {1.0f})})});
  std::string r = e.op("Floor", {e.op("Add", {abs_t, e.floats({1}, {0.5f})})});
  if (e.ed.opset() >= 11)
    r = e.op("Clip", {r, e.floats({}, {0.0f}), e.floats({}, {127.0f})});
  else
    r = e.op("Clip", {r},
             {{"min", Attribute::of_float(0.0f)}, {"max", Attribute::of_float(127.0f)}});
  // The sign back by Where(x < 0, −r, r) (onnxruntime runs Sign·Mul slower);
  // a t rounding to −0 where x < 0 gives the code −0 for 0: the same sums.
  const std::string negative = e.op("Less", {x, e.floats({1}, {0.0f})});
  return {e.op("Where", {negative, e.op("Neg", {r}), r}), s};
}

/// Whether Conv `reader` of kernel shape `k` is 1×1 of stride 1, unpadded.
bool w8a8_pointwise(const Node& reader, const Shape& k) {
  const auto all = [&](const char* a, size_t n, int64_t v) {
    return reader.attr_ints(a, std::vector<int64_t>(n, v)) == std::vector<int64_t>(n, v);
  };
  return k.size() == 4 && k[2] == 1 && k[3] == 1 && all("strides", 2, 1) && all("pads", 4, 0);
}

}  // namespace

bool w8a8_reader(const Node& reader, const Shape& weight) {
  if (!reader.domain.empty()) return false;
  // A matrix's inputs: [in, out] for MatMul and Gemm, [out, in] under transB.
  const bool transposed = reader.op_type == "Gemm" && reader.attr_int("transB", 0) != 0;
  const bool matrix_within = weight.size() == 2 && weight[transposed ? 1 : 0] <= kW8A8MaxIn;
  if (reader.op_type == "MatMul") return matrix_within;
  if (reader.op_type == "Gemm")
    return matrix_within && reader.attr_int("transA", 0) == 0 &&
           reader.attr_float("alpha", 1.0f) == 1.0f && reader.attr_float("beta", 1.0f) == 1.0f;
  return reader.op_type == "Conv" && reader.attr_int("group", 1) == 1 &&
         reader.attr_string("auto_pad", "NOTSET") == "NOTSET" && weight.size() == 4 &&
         weight[2] * weight[3] <= kW8A8ChunkIn && weight[1] * weight[2] * weight[3] <= kW8A8MaxIn;
}

void emit_w8a8(FormSink& sink, const Node& reader, const StoredWeight& w,
               const schemes::Encoded& enc, int64_t& bytes) {
  const int64_t out = enc.out(), in = enc.in();
  const bool conv = reader.op_type == "Conv";
  if (schemes::stored_form(enc.label()) != "int8" || enc.factor("scale").rank() != 1)
    throw Error(w.name, "int8-a8 form: needs int8 codes with one scale per output");
  if (w.dtype != DType::f32)
    throw Error(w.name, "int8-a8 form: the weight must be stored as f32, not " +
                            std::string(dtype_name(w.dtype)));
  if (conv && w.shape.size() != 4)
    throw Error(w.name, "int8-a8 form: a Conv kernel of rank " + std::to_string(w.shape.size()) +
                            " (2-D convolutions only)");
  const int64_t taps = conv ? w.shape[2] * w.shape[3] : 1;
  if (taps > kW8A8ChunkIn)
    throw Error(w.name, "int8-a8 form: a kernel of " + std::to_string(taps) + " taps (at most " +
                            std::to_string(kW8A8ChunkIn) +
                            ", whose integer sums stay exact in f32)");
  if (in > kW8A8MaxIn)
    throw Error(w.name, "int8-a8 form: " + std::to_string(in) + " inputs" +
                            (conv ? " (channels × taps)" : "") + "; at most " +
                            std::to_string(kW8A8MaxIn) + ", whose integer sums stay within int32");
  if (!w8a8_reader(reader, w.shape))
    throw Error(w.name, "int8-a8 form: reader '" + reader.name + "' (" + reader.op_type +
                            ") is not a Conv of groups 1 with explicit pads, a MatMul, or a Gemm "
                            "without transA and with alpha = beta = 1");
  // A 1×1 stride-1 unpadded Conv rounds each pixel's channels; any other
  // Conv (its sums mix pixels) rounds each image with one scale.
  const bool per_image = conv && !w8a8_pointwise(reader, w.shape);
  Emit e{sink, w.name};
  const auto [q, s] = emit_row_rounding(
      e, reader.inputs.at(0),
      per_image ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{conv ? 1 : -1});
  const Tensor& codes = enc.factor("q");
  const Tensor& scale = enc.factor("scale");
  bytes = bytes_of(codes) + bytes_of(scale);
  finish(e, e.cast_f32(e.constant("q", codes.reshape({out, in}))), w);
  // The reader's integer sums: one, or (in > kW8A8ChunkIn) one per chunk of
  // input channels (kW8A8ChunkIn / taps of them, a conv's sums running over
  // its taps too), the other channels' codes masked to 0, added in int32.
  int readers = 0;
  auto sum = [&](const std::string& codes_x) {
    Node r = reader;
    if (readers++ > 0) r.name = e.ed.fresh(reader.name + "/chunk");  // the first keeps its name
    r.inputs = {codes_x, w.name};
    // Gemm takes C until opset 11: a zero, added exactly to the integer sums.
    if (r.op_type == "Gemm") r.inputs.push_back(e.floats({1}, {0.0f}));
    r.outputs = {e.ed.fresh(w.name + ".acc")};
    const std::string acc = r.outputs[0];
    sink.emit(std::move(r));
    return acc;
  };
  std::string acc;
  if (in <= kW8A8ChunkIn) {
    acc = sum(q);
  } else {
    const int64_t channels = in / taps, step = std::max<int64_t>(1, kW8A8ChunkIn / taps);
    std::string total;
    for (int64_t a = 0; a < channels; a += step) {
      std::vector<float> mask(static_cast<size_t>(channels), 0.0f);
      std::fill(mask.begin() + a, mask.begin() + std::min(channels, a + step), 1.0f);
      const Shape along = conv ? Shape{channels, 1, 1} : Shape{channels};
      const std::string part =
          e.cast(sum(e.op("Mul", {q, e.floats(along, std::move(mask))})), DType::i32);
      total = total.empty() ? part : e.op("Add", {total, part});
    }
    acc = e.cast_f32(total);
  }
  const std::vector<int64_t> per_output =
      conv ? std::vector<int64_t>{out, 1, 1} : std::vector<int64_t>{out};
  const std::string sw =
      e.reshape(e.cast_f32(e.constant("scale", scale.reshape({out, 1}))), per_output);
  const bool biased = reader.inputs.size() > 2 && !reader.inputs[2].empty();
  const std::string& y = reader.outputs.at(0);
  const std::string scaled = e.op("Mul", {acc, e.op("Mul", {s, sw})}, {}, biased ? "" : y);
  if (biased) {
    const std::string b = conv ? e.reshape(reader.inputs[2], {out, 1, 1}) : reader.inputs[2];
    e.op("Add", {scaled, b}, {}, y);
  }
}

}  // namespace tailor::graph
