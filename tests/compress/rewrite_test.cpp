// The graph rewrites of tailor compress on small hand-built graphs: each
// scheme's standard-ONNX form (and the CompressedLinear/Conv form) must give
// what the original op gives on the scheme's decoded weight Ŵ (the scheme's
// reference decode, run through the same runtime op), and have the expected
// node structure; the standard file must run in onnxruntime with the same outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ort/ort_runner.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/rng.h"
#include "tailor/graph/verify.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
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

TEST(CompressRewrite, LowRankGroupedConvRepeatsBPerGroup) {
  const graph::Model m = check_standard(kGroupConv, "lowrank-r2");
  ASSERT_EQ(op_counts(m), (std::map<std::string, int>{{"Conv", 2}}));
  EXPECT_EQ(m.graph.nodes[0].attr_int("group", 1), 2);
  EXPECT_EQ(m.graph.nodes[1].attr_int("group", 1), 2);
  EXPECT_EQ(m.graph.initializers.at(m.graph.nodes[0].inputs[1]).shape(), (Shape{4, 2, 3, 3}));
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

TEST(CompressRewrite, FourBitCodesArePackedTwoPerByte) {
  for (const std::string label : {"int4", "int3", "ternary", "int4-g32", "int4-g64"}) {
    for (const OneLayer* l : {&kMatMul, &kConv}) {
      for (int64_t opset : {9, 13}) {
        OneLayer layer = *l;
        layer.opset = opset;
        const graph::Model m = check_standard(layer, label);
        int64_t packed = 0;
        for (const auto& [n, t] : m.graph.initializers)
          if (t.dtype() == DType::u8) packed = t.numel();
        // [out, in] = [24, 80] and [6, 36]: even counts, no padding except the
        // grouped codes (rows padded to whole groups).
        const int64_t out = l->layout == WeightLayout::conv ? 6 : 24;
        const int64_t in = l->layout == WeightLayout::conv ? 36 : 80;
        int64_t codes = out * in;
        if (label == "int4-g32") codes = out * 32 * ((in + 31) / 32);
        if (label == "int4-g64") codes = out * 64 * ((in + 63) / 64);
        if (label == "int4-g64" && in <= 64) codes = out * in;
        EXPECT_EQ(packed, codes / 2) << label << " on " << l->op;
      }
    }
  }
}

TEST(CompressRewrite, OtherSchemesStoreTheDecodedWeight) {
  for (const std::string label : {"sparse-2:4", "tt"}) {
    std::string form;
    const graph::Model m = check_standard(kMatMul, label, &form);
    EXPECT_EQ(form, "dense decoded");
    EXPECT_EQ(op_counts(m), (std::map<std::string, int>{{"MatMul", 1}}));
  }
  const OneLayer square{"MatMul", {2, 64}, {64, 64}, WeightLayout::in_out, {}};
  check_standard(square, "monarch");
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
  struct Case {
    const OneLayer* layer;
    std::string label, op;
  };
  for (const Case& c :
       {Case{&kMatMul, "int4-g32", "CompressedLinear"},
        Case{&kMatMul, "lowrank-r8", "CompressedLinear"}, Case{&kConv, "int8", "CompressedConv"},
        Case{&kConv, "lowrank-r3", "CompressedConv"},
        Case{&kGroupConv, "int8", "Conv"},  // group 2: decoded weight
        Case{&kGemmT, "int4", "Gemm"}}) {   // alpha 0.5: decoded weight
    const EncodedLayer e = c.layer->encode(c.label);
    const graph::Model m = compress::rewrite_tailor(c.layer->model(c.layer->weight()), {e});
    ASSERT_EQ(m.graph.nodes.size(), 1u);
    EXPECT_EQ(m.graph.nodes[0].op_type, c.op) << c.label;
    const Tensor x = randn(c.layer->x_shape, 3);
    EXPECT_LT(rel_diff(run1(c.layer->decoded_model(e), x), run1(m, x)), 1e-5) << c.label;
  }
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
                                                            {&kMatMul, "int8"}}) {
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
