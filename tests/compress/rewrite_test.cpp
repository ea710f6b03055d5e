// The graph rewrites of tailor compress on small hand-built graphs: each
// scheme's standard-ONNX form (and the CompressedLinear/Conv form) must give
// what the original op gives on the scheme's decoded weight Ŵ (the scheme's
// reference decode, run through the same runtime op), and have the expected
// node structure; the standard file must run in onnxruntime with the same outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "ort/ort_runner.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/verify.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/kernels.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {

using compress::EncodedLayer;
using graph::Attribute;

Tensor randn(const Shape& s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(s, v);
}

/// X → op(X, W[, b]) → Y, W (and b) initializers.
struct OneLayer {
  std::string op;
  Shape x_shape, w_shape;
  WeightLayout layout;
  std::vector<std::pair<std::string, Attribute>> attrs;
  int64_t bias = 0;  // bias length, 0 for none
  int64_t opset = 9;

  graph::Model model(const Tensor& w) const {
    graph::Model m;
    m.opset = opset;
    m.source = "test";
    m.graph.inputs = {"X"};
    m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of(x_shape)};
    m.graph.outputs = {"Y"};
    m.graph.add_initializer("W", w);
    graph::Node n;
    n.name = "layer";
    n.op_type = op;
    n.inputs = {"X", "W"};
    if (bias) {
      m.graph.add_initializer("b", randn({bias}, 99));
      n.inputs.push_back("b");
    }
    n.outputs = {"Y"};
    n.attributes = attrs;
    m.graph.nodes.push_back(n);
    return m;
  }
  Tensor weight() const { return randn(w_shape, 7); }
  /// The planned layer: W's [out, in] view (conv kernels 4-D) encoded by `label`.
  EncodedLayer encode(const std::string& label) const {
    const Tensor w = weight();
    Tensor view = w;
    if (layout == WeightLayout::in_out) view = w.transpose(0, 1).contiguous();
    if (layout == WeightLayout::out_in) view = w;
    EncodedLayer e;
    e.name = "W";
    e.layout = layout;
    e.stored_shape = w_shape;
    e.encoded = schemes::parse_scheme(label).encode(view);
    return e;
  }
  /// The original graph with W replaced by Ŵ (decoded) in its stored layout.
  graph::Model decoded_model(const EncodedLayer& e) const {
    Tensor d = e.encoded->decode().contiguous();
    if (layout == WeightLayout::in_out) d = d.transpose(0, 1).contiguous();
    return model(d.reshape(w_shape));
  }
};

Tensor run1(const graph::Model& m, const Tensor& x) {
  runtime::Executor ex(m);
  return ex.run({{"X", x}}).at("Y");
}

double rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  return std::sqrt(num / den);
}

std::map<std::string, int> op_counts(const graph::Model& m) {
  std::map<std::string, int> c;
  for (const auto& n : m.graph.nodes) ++c[n.op_type];
  return c;
}

const OneLayer kMatMul{"MatMul", {3, 80}, {80, 24}, WeightLayout::in_out, {}};
const OneLayer kGemmT{"Gemm",
                      {3, 80},
                      {24, 80},
                      WeightLayout::out_in,
                      {{"transB", Attribute::of_int(1)}, {"alpha", Attribute::of_float(0.5f)}},
                      24};
const OneLayer kConv{"Conv",
                     {1, 4, 9, 9},
                     {6, 4, 3, 3},
                     WeightLayout::conv,
                     {{"kernel_shape", Attribute::of_ints({3, 3})},
                      {"pads", Attribute::of_ints({1, 1, 1, 1})},
                      {"strides", Attribute::of_ints({2, 2})}},
                     6};
const OneLayer kGroupConv{"Conv",
                          {1, 4, 7, 7},
                          {6, 2, 3, 3},
                          WeightLayout::conv,
                          {{"kernel_shape", Attribute::of_ints({3, 3})},
                           {"pads", Attribute::of_ints({1, 1, 1, 1})},
                           {"dilations", Attribute::of_ints({2, 2})},
                           {"group", Attribute::of_int(2)}},
                          6};
const OneLayer kSquare{"MatMul", {2, 64}, {64, 64}, WeightLayout::in_out, {}};
const OneLayer kDepthwise{"Conv",
                          {2, 8, 7, 7},
                          {8, 1, 3, 3},
                          WeightLayout::conv,
                          {{"kernel_shape", Attribute::of_ints({3, 3})},
                           {"pads", Attribute::of_ints({1, 1, 1, 1})},
                           {"strides", Attribute::of_ints({2, 2})},
                           {"group", Attribute::of_int(8)}},
                          8};

/// Standard rewrite of `layer` under `label`: output within 1e-5 relative of
/// the original op on Ŵ; returns the rewritten model.
graph::Model check_standard(const OneLayer& layer, const std::string& label,
                            std::string* form = nullptr) {
  const EncodedLayer e = layer.encode(label);
  std::vector<compress::LayerRewrite> log;
  const graph::Model m = compress::rewrite_standard(layer.model(layer.weight()), {e}, &log);
  EXPECT_NO_THROW(graph::verify(m));
  const Tensor x = randn(layer.x_shape, 3);
  EXPECT_LT(rel_diff(run1(layer.decoded_model(e), x), run1(m, x)), 1e-5)
      << layer.op << " " << label;
  EXPECT_EQ(log.size(), 1u);
  if (form && !log.empty()) *form = log[0].form;
  return m;
}

TEST(CompressRewrite, LowRankMatMulIsTwoMatMuls) {
  const graph::Model m = check_standard(kMatMul, "lowrank-r8");
  EXPECT_EQ(op_counts(m), (std::map<std::string, int>{{"MatMul", 2}}));
  EXPECT_EQ(m.graph.initializers.count("W"), 0u);
  // Bᵀ [80, 8] and Aᵀ [8, 24].
  int64_t numel = 0;
  for (const auto& [n, t] : m.graph.initializers) numel += t.numel();
  EXPECT_EQ(numel, 80 * 8 + 8 * 24);
}

TEST(CompressRewrite, LowRankGemmKeepsAlphaAndBias) {
  const graph::Model m = check_standard(kGemmT, "lowrank-r4");
  EXPECT_EQ(op_counts(m), (std::map<std::string, int>{{"Gemm", 1}, {"MatMul", 1}}));
}

TEST(CompressRewrite, LowRankConvIsKxKThenOneByOne) {
  const graph::Model m = check_standard(kConv, "lowrank-r3");
  ASSERT_EQ(op_counts(m), (std::map<std::string, int>{{"Conv", 2}}));
  const auto& first = m.graph.nodes[0];
  const auto& second = m.graph.nodes[1];
  EXPECT_EQ(first.attr_ints("strides", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m.graph.initializers.at(first.inputs[1]).shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(m.graph.initializers.at(second.inputs[1]).shape(), (Shape{6, 3, 1, 1}));
  EXPECT_EQ(second.inputs.size(), 3u);  // the bias moves to the 1×1 conv
}

TEST(CompressRewrite, LowRankGroupedConvStoresBOnce) {
  // The groups move into the batch around a group-1 conv with B: B [R, in/g, k, k] once.
  for (const OneLayer* l : {&kGroupConv, &kDepthwise}) {
    const graph::Model m = check_standard(*l, "lowrank-r2");
    ASSERT_EQ(op_counts(m), (std::map<std::string, int>{{"Conv", 2}, {"Reshape", 2}}));
    const Shape& s = l->w_shape;
    int64_t numel = 0;
    for (const auto& [n, t] : m.graph.initializers)
      if (t.dtype() == DType::f32 && n != "b") numel += t.numel();
    EXPECT_EQ(numel, 2 * (s[0] + s[1] * s[2] * s[3])) << l->op;  // planned: R·(out + in)
  }
}

TEST(CompressRewrite, TuckerConvIsThreeConvs) {
  const graph::Model m = check_standard(kConv, "tucker");
  ASSERT_EQ(op_counts(m), (std::map<std::string, int>{{"Conv", 3}}));
  EXPECT_EQ(m.graph.nodes[0].attr_ints("kernel_shape", {}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.graph.nodes[1].attr_ints("strides", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m.graph.nodes[2].attr_ints("kernel_shape", {}), (std::vector<int64_t>{1, 1}));
}

TEST(CompressRewrite, Int8IsCastMulOfInt8Codes) {
  std::string form;
  for (const OneLayer* l : {&kMatMul, &kGemmT, &kConv, &kGroupConv}) {
    const graph::Model m = check_standard(*l, "int8", &form);
    const auto c = op_counts(m);
    EXPECT_EQ(c.at("Cast"), 2);
    EXPECT_EQ(c.at("Mul"), 1);
    const int64_t numel = shape_numel(l->w_shape);
    bool found = false;
    for (const auto& [n, t] : m.graph.initializers)
      if (t.dtype() == DType::i8) found = t.numel() == numel;
    EXPECT_TRUE(found) << "int8 codes initializer of " << numel << " elements";
  }
}

/// Bytes of the initializers of `m` holding W's stored factors ("W.<factor>"),
/// not the small constants of the graph (shapes, one-hot tables, padding).
int64_t payload_bytes(const graph::Model& m) {
  static const std::regex factor(R"(W\.(q|scale|values|L|R|G[0-9]+|core|U[0-2]|A|B))");
  int64_t bytes = 0;
  for (const auto& [n, t] : m.graph.initializers)
    if (std::regex_match(n, factor)) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

TEST(CompressRewrite, EverySchemeIsStoredAtItsPlannedBytes) {
  // The file holds the stored factors verbatim: the scheme's byte formula
  // (DESIGN.md) counts exactly the payload initializers.
  const OneLayer odd{"MatMul", {2, 81}, {81, 12}, WeightLayout::in_out, {}};  // in mod 4 = 1
  struct Case {
    const OneLayer* layer;
    std::string label;
  };
  for (const Case& c :
       {Case{&kMatMul, "int8"}, Case{&kMatMul, "int4"}, Case{&kConv, "int3"},
        Case{&kMatMul, "int3"}, Case{&kMatMul, "ternary"}, Case{&kGroupConv, "ternary"},
        Case{&kMatMul, "int4-g32"}, Case{&kConv, "int4-g32"}, Case{&kMatMul, "sparse-2:4"},
        Case{&odd, "sparse-2:4"}, Case{&kConv, "sparse-2:4"}, Case{&kSquare, "monarch"},
        Case{&kMatMul, "tt"}, Case{&kGemmT, "tt"}, Case{&kMatMul, "tucker"},
        Case{&kGroupConv, "tucker"}}) {
    std::string form;
    const graph::Model m = check_standard(*c.layer, c.label, &form);
    const Shape view = c.layer->layout == WeightLayout::in_out
                           ? Shape{c.layer->w_shape[1], c.layer->w_shape[0]}
                           : c.layer->w_shape;
    const auto planned = static_cast<int64_t>(schemes::parse_scheme(c.label).predicted_bytes(view));
    EXPECT_EQ(payload_bytes(m), planned) << c.label << " on " << c.layer->op << ": " << form;
    EXPECT_NE(form, "dense decoded") << c.label;
  }
}

TEST(CompressRewrite, SharedWeightGetsWeightLevelLowRank) {
  // W read by two MatMuls: the weight itself becomes MatMul(A, B).
  OneLayer l = kMatMul;
  graph::Model m0 = l.model(l.weight());
  graph::Node second = m0.graph.nodes[0];
  second.name = "layer2";
  second.outputs = {"Y2"};
  m0.graph.nodes.push_back(second);
  m0.graph.outputs.push_back("Y2");
  const EncodedLayer e = l.encode("lowrank-r8");
  std::vector<compress::LayerRewrite> log;
  const graph::Model m = compress::rewrite_standard(m0, {e}, &log);
  EXPECT_EQ(log.at(0).form, "MatMul(A, B) as the weight");
  const Tensor x = randn(l.x_shape, 3);
  runtime::Executor ex(m);
  const auto out = ex.run({{"X", x}});
  const Tensor ref = run1(l.decoded_model(e), x);
  EXPECT_LT(rel_diff(ref, out.at("Y")), 1e-5);
  EXPECT_LT(rel_diff(ref, out.at("Y2")), 1e-5);
}

TEST(CompressRewrite, TailorGraphUsesCompressedOps) {
  // rewrite_tailor is the standard file with its weight forms recognised.
  struct Case {
    const OneLayer* layer;
    std::string label, op;
  };
  for (const Case& c :
       {Case{&kMatMul, "int4-g32", "CompressedLinear"}, Case{&kMatMul, "int3", "CompressedLinear"},
        Case{&kMatMul, "ternary", "CompressedLinear"},
        Case{&kMatMul, "sparse-2:4", "CompressedLinear"}, Case{&kMatMul, "tt", "CompressedLinear"},
        Case{&kMatMul, "tucker", "CompressedLinear"}, Case{&kSquare, "monarch", "CompressedLinear"},
        Case{&kConv, "int8", "CompressedConv"}, Case{&kConv, "int4-g32", "CompressedConv"},
        Case{&kGemmT, "int8", "Gemm"},         // alpha 0.5: the form stays
        Case{&kGroupConv, "int8", "Conv"}}) {  // group 2: the form stays
    const EncodedLayer e = c.layer->encode(c.label);
    const graph::Model m = compress::rewrite_tailor(c.layer->model(c.layer->weight()), {e});
    ASSERT_FALSE(m.graph.nodes.empty());
    EXPECT_EQ(m.graph.nodes.back().op_type, c.op) << c.label;
    if (c.op.rfind("Compressed", 0) == 0) {
      EXPECT_EQ(m.graph.nodes.size(), 1u) << c.label;
      const graph::Attribute* w = m.graph.nodes.back().find("weight");
      ASSERT_TRUE(w && w->encoded);
      EXPECT_EQ(w->encoded->label(), c.label);
      EXPECT_EQ(w->encoded->bytes(), e.encoded->bytes());
    }
    const Tensor x = randn(c.layer->x_shape, 3);
    EXPECT_LT(rel_diff(run1(c.layer->decoded_model(e), x), run1(m, x)), 1e-5) << c.label;
  }
}

TEST(CompressRewrite, AlteredFormIsNotRecognised) {
  // A changed constant inside the form (a scale's divisor) is not the form:
  // the graph keeps its operators.
  const EncodedLayer e = kMatMul.encode("int4");
  graph::Model m = compress::rewrite_standard(kMatMul.model(kMatMul.weight()), {e});
  bool altered = false;
  for (auto& [n, t] : m.graph.initializers)
    if (!altered && t.dtype() == DType::f32 && t.numel() == 1 && t.data<float>()[0] == 16.0f) {
      Tensor c = Tensor::from_f32({1}, std::vector<float>{15.0f});
      t = c;
      altered = true;
    }
  ASSERT_TRUE(altered);
  const graph::Model r = graph::recognise_compressed_weights(m, {});
  EXPECT_EQ(r.graph.nodes.size(), m.graph.nodes.size());
  EXPECT_EQ(r.graph.nodes.back().op_type, "MatMul");
}

TEST(CompressRewrite, UnknownWeightIsAnErrorNamingIt) {
  EncodedLayer e = kMatMul.encode("int8");
  e.name = "missing";
  testing::expect_error_naming(
      [&] { compress::rewrite_standard(kMatMul.model(kMatMul.weight()), {e}); }, "missing",
      "not an initializer");
}

// The standard file runs in onnxruntime with the outputs of tailor's runtime.
TEST(CompressRewrite, StandardFileRunsInOnnxRuntime) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  int k = 0;
  for (const auto& [layer, label] :
       std::vector<std::pair<const OneLayer*, std::string>>{{&kMatMul, "int4-g32"},
                                                            {&kGemmT, "lowrank-r4"},
                                                            {&kConv, "tucker"},
                                                            {&kConv, "int3"},
                                                            {&kGroupConv, "lowrank-r2"},
                                                            {&kDepthwise, "lowrank-r2"},
                                                            {&kMatMul, "int8"},
                                                            {&kMatMul, "ternary"},
                                                            {&kMatMul, "sparse-2:4"},
                                                            {&kMatMul, "tt"},
                                                            {&kMatMul, "tucker"},
                                                            {&kSquare, "monarch"},
                                                            {&kGroupConv, "int4-g32"}}) {
    const graph::Model m =
        compress::rewrite_standard(layer->model(layer->weight()), {layer->encode(label)});
    const std::string path = dir.file("m" + std::to_string(k++) + ".onnx");
    graph::write_onnx(m, path);
    const Tensor x = randn(layer->x_shape, 5);
    const Tensor ours = run1(graph::import_onnx(path), x);
    const Tensor ort = testing::run_ort(path, {{"X", x}}).at("Y");
    EXPECT_LT(rel_diff(ours, ort), 1e-4) << label << " on " << layer->op;
  }
}

// Data-aware quantizers share the reference form; composites (Ŵ = Q + A·B or
// quantized A·B) are written as their parts dequantized, MatMul(A, B), Add,
// with exactly the stored bytes where the parts' forms are ONNX-native.
TEST(CompressRewrite, DataAwareAndCompositeLabels) {
  for (const std::string label :
       {"int4-g32-mse", "int8-mse", "int4+r4", "int3+r4-q8", "lowrank-q8-r4", "lowrank-q4-r4"}) {
    for (const OneLayer* l : {&kMatMul, &kGemmT, &kConv}) {
      const EncodedLayer e = l->encode(label);
      std::vector<compress::LayerRewrite> log;
      check_standard(*l, label);
      compress::rewrite_standard(l->model(l->weight()), {e}, &log);
      if (label != "int3+r4-q8" &&
          label != "int4-g32-mse")  // 3-bit codes take 4 bits; padded groups
        EXPECT_EQ(log.at(0).file_bytes, static_cast<int64_t>(e.encoded->bytes()))
            << label << " on " << l->op;
      // tailor's runtime: CompressedLinear / CompressedConv on the stored parts.
      const Tensor x = randn(l->x_shape, 4);
      EXPECT_LT(rel_diff(run1(l->decoded_model(e), x),
                         run1(compress::rewrite_tailor(l->model(l->weight()), {e}), x)),
                1e-5)
          << label << " on " << l->op;
    }
  }
}

TEST(CompressRewrite, CompositeFileRunsInOnnxRuntime) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  int k = 0;
  for (const auto& [layer, label] : std::vector<std::pair<const OneLayer*, std::string>>{
           {&kMatMul, "int4+r4"}, {&kConv, "int3+r4-q8"}, {&kGemmT, "lowrank-q4-r4"}}) {
    const graph::Model m =
        compress::rewrite_standard(layer->model(layer->weight()), {layer->encode(label)});
    const std::string path = dir.file("c" + std::to_string(k++) + ".onnx");
    graph::write_onnx(m, path);
    const Tensor x = randn(layer->x_shape, 5);
    EXPECT_LT(
        rel_diff(run1(graph::import_onnx(path), x), testing::run_ort(path, {{"X", x}}).at("Y")),
        1e-4)
        << label << " on " << layer->op;
  }
}

}  // namespace
}  // namespace tailor

namespace tailor {
namespace {

const OneLayer kPointwise{"Conv",
                          {2, 40, 5, 7},
                          {24, 40, 1, 1},
                          WeightLayout::conv,
                          {{"kernel_shape", Attribute::of_ints({1, 1})}},
                          24};
const OneLayer kMatMul3d{"MatMul", {2, 3, 80}, {80, 24}, WeightLayout::in_out, {}};
// 40 rows: CompressedLinear runs them through the W8A8 conv kernel.
const OneLayer kMatMulTall{"MatMul", {1, 40, 120}, {120, 200}, WeightLayout::in_out, {}};
// 1100 inputs: past graph::kW8A8ChunkIn, the file sums two masked chunks.
const OneLayer kMatMulWide{"MatMul", {1, 20, 1100}, {1100, 16}, WeightLayout::in_out, {}};
const OneLayer kGemmA8{
    "Gemm", {5, 80}, {24, 80}, WeightLayout::out_in, {{"transB", Attribute::of_int(1)}}, 24};

/// Y [rows, out] = the W8A8 GEMM reference (q8_q8_gemm_ref) on X [rows, in].
std::vector<float> w8a8_gemm(const EncodedLayer& e, const std::vector<float>& x, int64_t rows) {
  const auto view = schemes::w8a8_view(*e.encoded);
  EXPECT_TRUE(view);
  std::vector<float> y(static_cast<size_t>(rows * e.encoded->out()));
  schemes::kernels::PackedGemmArgs a = view->args;
  a.x = x.data(), a.batch = rows, a.y = y.data();
  schemes::kernels::q8_q8_gemm_ref(a);
  return y;
}

/// Largest |a − b| over the largest |b|.
double max_rel(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  double d = 0, m = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(double(x[i]) - y[i]));
    m = std::max(m, std::abs(double(y[i])));
  }
  return d / m;
}

/// int8-a8's outputs by definition: the W8A8 GEMM reference on the rows of X
/// (a 1×1 conv's rows are its pixels), then the bias in f32.
Tensor w8a8_by_definition(const OneLayer& layer, const EncodedLayer& e, const Tensor& x) {
  const auto view = schemes::w8a8_view(*e.encoded);
  EXPECT_TRUE(view);
  const int64_t out = e.encoded->out(), in = e.encoded->in();
  std::vector<float> xv = x.to_f32_vector();
  const bool conv = layer.op == "Conv";
  const int64_t n = conv ? x.dim(0) : 1, pix = conv ? x.dim(2) * x.dim(3) : x.numel() / in;
  std::vector<float> rows(static_cast<size_t>(pix * in)), y(static_cast<size_t>(pix * out));
  std::vector<float> result;
  const graph::Model m = layer.model(layer.weight());
  const std::vector<float> bias =
      layer.bias ? m.graph.initializers.at("b").to_f32_vector() : std::vector<float>(out, 0.0f);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t j = 0; j < pix; ++j)
      for (int64_t k = 0; k < in; ++k)
        rows[j * in + k] = conv ? xv[(b * in + k) * pix + j] : xv[j * in + k];
    schemes::kernels::PackedGemmArgs a = view->args;
    a.x = rows.data(), a.batch = pix, a.y = y.data();
    schemes::kernels::q8_q8_gemm_ref(a);
    for (int64_t i = 0; i < pix * out; ++i) {
      const int64_t o = conv ? i / pix : i % out, j = conv ? i % pix : i / out;
      result.push_back(y[j * out + o] + (layer.bias ? bias[o] : 0.0f));
    }
  }
  Shape s = x.shape();
  s[conv ? 1 : s.size() - 1] = out;
  return Tensor::from_f32(s, result);
}

// int8-a8: model.onnx holds int8's codes (no f32 copy), rounds each reader's
// input to integer-valued f32 codes, sums their products exactly in the
// reader and scales after (graph::emit_w8a8); tailor recognises the form and
// runs W8A8 with the definition's bits; the standard graph run op by op and
// onnxruntime compute the same bits.
TEST(CompressRewrite, Int8A8RoundsActivationsInTheFileAndRunsW8A8) {
  testing::TempDir dir;
  int k = 0;
  for (const OneLayer* layer :
       {&kPointwise, &kMatMul, &kMatMul3d, &kMatMulTall, &kGemmA8, &kMatMulWide}) {
    const EncodedLayer e = layer->encode("int8-a8");
    std::vector<compress::LayerRewrite> log;
    const graph::Model std_m = compress::rewrite_standard(layer->model(layer->weight()), {e}, &log);
    EXPECT_EQ(op_counts(std_m)["ReduceMax"], 1) << layer->op;
    EXPECT_EQ(op_counts(std_m)["Neg"], 1) << layer->op;
    EXPECT_EQ(op_counts(std_m)[layer->op], layer == &kMatMulWide ? 2 : 1) << layer->op;
    ASSERT_EQ(log.size(), 1u);
    EXPECT_NE(log[0].form.find("W8A8"), std::string::npos) << log[0].form;
    EXPECT_EQ(log[0].file_bytes, static_cast<int64_t>(e.encoded->bytes())) << layer->op;
    EXPECT_EQ(std_m.graph.initializers.at("W.q").dtype(), DType::i8) << layer->op;
    const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
    ASSERT_EQ(ours.graph.nodes.size(), 1u) << layer->op;
    const graph::Attribute* w = ours.graph.nodes[0].find("weight");
    ASSERT_TRUE(w && w->encoded);
    EXPECT_EQ(w->encoded->label(), "int8-a8");
    const Tensor x = randn(layer->x_shape, 3);
    const Tensor want = w8a8_by_definition(*layer, e, x);
    const Tensor got = run1(ours, x);
    EXPECT_EQ(got.to_f32_vector(), want.to_f32_vector()) << layer->op;
    EXPECT_EQ(run1(std_m, x).to_f32_vector(), want.to_f32_vector()) << layer->op;
    // The rounding shows: weight-only int8 gives other outputs.
    EXPECT_GT(rel_diff(run1(layer->decoded_model(e), x), want), 1e-4) << layer->op;
    if (testing::ort_unavailable().empty()) {
      const std::string path = dir.file("a8_" + std::to_string(k++) + ".onnx");
      graph::write_onnx(std_m, path);
      EXPECT_LT(max_rel(testing::run_ort(path, {{"X", x}}).at("Y"), want), 1e-6) << layer->op;
    }
  }
  // Readers the form cannot take name the weight.
  const OneLayer strided{
      "Conv",
      {1, 8, 6, 6},
      {4, 8, 1, 1},
      WeightLayout::conv,
      {{"kernel_shape", Attribute::of_ints({1, 1})}, {"strides", Attribute::of_ints({2, 2})}}};
  std::string why;
  try {
    compress::rewrite_standard(strided.model(strided.weight()), {strided.encode("int8-a8")});
  } catch (const Error& err) {
    why = err.what();
  }
  EXPECT_NE(why.find("W"), std::string::npos) << why;
  EXPECT_NE(why.find("stride 1"), std::string::npos) << why;
  // A k×k conv's im2row rows mix pixels: int8-a8 is not offered there.
  EXPECT_FALSE(schemes::parse_scheme("int8-a8").applicable({6, 4, 3, 3}));
  EXPECT_TRUE(schemes::parse_scheme("int8-a8").applicable({6, 4, 1, 1}));
}

// Two chained int8-a8 1×1 convs (biases, a Relu between) and a MatMul on
// their pixels: every layer's rounding reads the previous layer's output, so a
// last-bit difference anywhere would flip later codes. tailor runs the file
// as three W8A8 nodes with the definition's bits (q8_q8_gemm_ref layer after
// layer), onnxruntime computes the same numbers, and the file holds the
// codes and scales, not an f32 copy of the weights.
TEST(CompressRewrite, Int8A8ChainAgreesWithOnnxRuntime) {
  const int64_t c0 = 40, c1 = 24, c2 = 32, c3 = 20, h = 5, w = 7, pix = h * w;
  graph::Model m;
  m.opset = 9;
  m.source = "test";
  m.graph.inputs = {"X"};
  m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, c0, h, w})};
  m.graph.outputs = {"Y"};
  const Tensor w1 = randn({c1, c0, 1, 1}, 11), w2 = randn({c2, c1, 1, 1}, 12),
               w3 = randn({c2, c3}, 13), b1 = randn({c1}, 14), b2 = randn({c2}, 15);
  for (const auto& [name, t] : std::vector<std::pair<std::string, Tensor>>{
           {"W1", w1}, {"W2", w2}, {"W3", w3}, {"b1", b1}, {"b2", b2}})
    m.graph.add_initializer(name, t);
  Tensor shape = Tensor::zeros(DType::i64, {3});
  std::copy_n(std::vector<int64_t>{1, c2, pix}.begin(), 3, shape.mutable_data<int64_t>());
  m.graph.add_initializer("shape", shape);
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    graph::Node n;
    n.name = op + "_" + out;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attributes = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
  };
  const std::vector<std::pair<std::string, Attribute>> k1{
      {"kernel_shape", Attribute::of_ints({1, 1})}};
  node("Conv", {"X", "W1", "b1"}, "h1", k1);
  node("Relu", {"h1"}, "r1");
  node("Conv", {"r1", "W2", "b2"}, "h2", k1);
  node("Reshape", {"h2", "shape"}, "flat");
  node("Transpose", {"flat"}, "rows", {{"perm", Attribute::of_ints({0, 2, 1})}});
  node("MatMul", {"rows", "W3"}, "Y");
  auto encode = [](const std::string& name, const Tensor& t, WeightLayout layout) {
    EncodedLayer e;
    e.name = name;
    e.layout = layout;
    e.stored_shape = t.shape();
    const Tensor view = layout == WeightLayout::in_out ? t.transpose(0, 1).contiguous() : t;
    e.encoded = schemes::parse_scheme("int8-a8").encode(view);
    return e;
  };
  const std::vector<EncodedLayer> layers{encode("W1", w1, WeightLayout::conv),
                                         encode("W2", w2, WeightLayout::conv),
                                         encode("W3", w3, WeightLayout::in_out)};
  std::vector<compress::LayerRewrite> log;
  const graph::Model std_m = compress::rewrite_standard(m, layers, &log);

  // The definition, layer after layer on the pixels as rows.
  const Tensor x = randn({1, c0, h, w}, 16);
  const std::vector<float> xv = x.to_f32_vector();
  std::vector<float> rows(static_cast<size_t>(pix * c0));
  for (int64_t p = 0; p < pix; ++p)
    for (int64_t c = 0; c < c0; ++c) rows[p * c0 + c] = xv[c * pix + p];
  std::vector<float> y1 = w8a8_gemm(layers[0], rows, pix);
  const std::vector<float> bv1 = b1.to_f32_vector(), bv2 = b2.to_f32_vector();
  for (int64_t i = 0; i < pix * c1; ++i) y1[i] = std::max(y1[i] + bv1[i % c1], 0.0f);
  std::vector<float> y2 = w8a8_gemm(layers[1], y1, pix);
  for (int64_t i = 0; i < pix * c2; ++i) y2[i] += bv2[i % c2];
  const Tensor want = Tensor::from_f32({1, pix, c3}, w8a8_gemm(layers[2], y2, pix));

  // tailor: three W8A8 nodes, the definition's bits.
  const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
  int a8 = 0;
  for (const auto& n : ours.graph.nodes)
    if (const graph::Attribute* a = n.find("weight"); a && a->encoded)
      a8 += a->encoded->label() == "int8-a8";
  EXPECT_EQ(a8, 3);
  EXPECT_EQ(op_counts(ours)["ReduceMax"], 0);
  EXPECT_EQ(run1(ours, x).to_f32_vector(), want.to_f32_vector());
  EXPECT_EQ(run1(std_m, x).to_f32_vector(), want.to_f32_vector());

  // The file: codes i8 and scales f16 as stored, beside the biases and the
  // form's few small constants (shapes, 127, 0.5, ...).
  ASSERT_EQ(log.size(), 3u);
  int64_t stored = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(log[i].file_bytes, static_cast<int64_t>(layers[i].encoded->bytes()));
    stored += log[i].file_bytes;
  }
  EXPECT_EQ(stored, c1 * c0 + c2 * c1 + c3 * c2 + 2 * (c1 + c2 + c3));
  int64_t held = 0;
  for (const auto& [name, t] : std_m.graph.initializers) held += t.nbytes();
  const int64_t biases = 4 * (c1 + c2), small = 512;
  EXPECT_GE(held, stored + biases);
  EXPECT_LT(held, stored + biases + small);
  testing::TempDir dir;
  const std::string path = dir.file("chain.onnx");
  graph::write_onnx(std_m, path);
  EXPECT_LT(static_cast<int64_t>(std::filesystem::file_size(path)), held + 8192);

  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_LT(max_rel(testing::run_ort(path, {{"X", x}}).at("Y"), want), 1e-4);
}

}  // namespace
}  // namespace tailor
