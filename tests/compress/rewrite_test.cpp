// The graph rewrites of tailor compress on small hand-built graphs: each
// scheme's standard-ONNX form (and the CompressedLinear/Conv form) must give
// what the original op gives on the scheme's decoded weight Ŵ (the scheme's
// reference decode, run through the same runtime op), and have the expected
// node structure; the standard file must run in onnxruntime with the same outputs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <regex>

#include "ort/ort_runner.h"
#include "rewrite_util.h"
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

using namespace rewrite_test;

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
          label != "int4-g32-mse") {  // 3-bit codes take 4 bits; padded groups
        EXPECT_EQ(log.at(0).file_bytes, static_cast<int64_t>(e.encoded->bytes()))
            << label << " on " << l->op;
      }
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
