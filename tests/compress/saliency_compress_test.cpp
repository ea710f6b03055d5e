// tailor compress on a small saliency-like ONNX graph built here (f16 weights
// between Casts, as ISNet is stored; last op Sigmoid, output N×1×H×W), end to
// end on the committed saliency fixture images: the saliency task is chosen
// automatically, its per-image mask MAE and IoU are the values recomputed
// here from the original and the written model.onnx, and model.onnx is a
// valid graph that shrinks and runs in onnxruntime.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ort/ort_runner.h"
#include "tailor/compress/compress.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/onnx.h"
#include "tailor/report/report.h"
#include "tailor/runtime/executor.h"
#include "tailor/tasks/image.h"
#include "tailor/tasks/saliency.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using graph::Attribute;
using testing::TempDir;

constexpr int kSide = 24;

/// X f32 [1,3,24,24] → Cast f16 → Conv 3→16 3×3 → Relu → Conv 16→32 3×3 →
/// Relu → Conv 32→32 3×3 → Relu → Conv 32→`mask_channels` 1×1 → Sigmoid →
/// Cast f32 → Y [1,mask_channels,24,24]; weights f16, seeded N(0, 1/fan_in).
graph::Model saliency_graph(int64_t mask_channels = 1) {
  graph::Model m;
  m.opset = 13;
  m.source = "saliency-test";
  m.graph.inputs = {"X"};
  m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 3, kSide, kSide})};
  m.graph.outputs = {"Y"};
  m.graph.types["Y"] =
      graph::ValueType{DType::f32, graph::sym_shape_of({1, mask_channels, kSide, kSide})};
  Rng rng(5);
  auto weight = [&](const std::string& name, Shape s) {
    int64_t fan_in = 1;
    for (size_t i = 1; i < s.size(); ++i) fan_in *= s[i];
    std::vector<float> v(static_cast<size_t>(shape_numel(s)));
    for (float& x : v) x = static_cast<float>(rng.normal() * std::sqrt(2.0 / fan_in));
    m.graph.add_initializer(name, Tensor::from_f32(s, v).to(DType::f16));
  };
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    graph::Node n;
    n.op_type = op;
    n.name = out + "/op";
    n.inputs = std::move(in);
    n.outputs = {out};
    m.graph.nodes.push_back(n);
    return &m.graph.nodes.back();
  };
  node("Cast", {"X"}, "x16")->set("to", Attribute::of_int(10));
  std::string x = "x16";
  const std::vector<std::pair<int64_t, int64_t>> convs{{16, 3}, {32, 16}, {32, 32}};
  for (size_t i = 0; i < convs.size(); ++i) {
    const std::string w = "conv" + std::to_string(i) + ".weight",
                      b = "conv" + std::to_string(i) + ".bias";
    weight(w, {convs[i].first, convs[i].second, 3, 3});
    weight(b, {convs[i].first});
    graph::Node* c = node("Conv", {x, w, b}, "c" + std::to_string(i));
    c->set("kernel_shape", Attribute::of_ints({3, 3}));
    c->set("pads", Attribute::of_ints({1, 1, 1, 1}));
    x = "r" + std::to_string(i);
    node("Relu", {"c" + std::to_string(i)}, x);
  }
  weight("head.weight", {mask_channels, 32, 1, 1});
  weight("head.bias", {mask_channels});
  node("Conv", {x, "head.weight", "head.bias"}, "logit");
  node("Sigmoid", {"logit"}, "mask16");
  node("Cast", {"mask16"}, "Y")->set("to", Attribute::of_int(1));
  return m;
}

compress::CompressOptions options(const TempDir& dir, const std::string& model) {
  compress::CompressOptions o;
  o.model = model;
  o.budget = "4.5bpw";
  o.out_dir = dir.file("out");
  o.cache = false;
  o.threads = 2;
  o.min_params = 1000;
  o.report_time_limit = 1;
  o.calib_dir = testing::fixture_path("saliency");
  return o;
}

Tensor run_promoted(graph::Model m, const Tensor& x) {
  graph::promote_f16_to_f32(m);
  runtime::Executor ex(std::move(m));
  return ex.run({{"X", x}}).at("Y");
}

TEST(CompressSaliency, MaskMaeAndIouOnFixtureImages) {
  TempDir dir;
  const std::string model = dir.file("saliency.onnx");
  graph::write_onnx(saliency_graph(), model);
  compress::CompressOptions o = options(dir, model);
  o.report = true;
  const compress::CompressResult r = compress::compress_model(o);

  // Planned: conv1 (32·16·9 = 4608) and conv2 (32·32·9 = 9216); conv0
  // (16·3·9 = 432) and the head (32) are under --min-params 1000.
  EXPECT_EQ(r.profile.layers.size(), 2u);
  // 4.5 bits per planned weight: (16·32·9 + 32·32·9)·4.5/8 = 7776 bytes + fixed.
  EXPECT_LE(r.plan.total_bytes, r.plan.fixed_bytes + 7776);

  ASSERT_TRUE(r.verification.saliency.has_value()) << "saliency task not chosen automatically";
  const report::SaliencyCheck& s = *r.verification.saliency;
  EXPECT_EQ(s.output, "Y");
  // The odd-numbered images are verified; ball and mug calibrate the output objective.
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(r.verification.inputs, 2);
  const std::vector<std::string> files{"bird.png", "person.png"};
  const graph::Model original = graph::import_onnx(model);
  const graph::Model written = graph::import_onnx(dir.file("out/model.onnx"));
  double mae_mean = 0;
  for (size_t k = 0; k < files.size(); ++k) {
    EXPECT_EQ(s.inputs[k].input, files[k]);
    // The input as IMG.LY prepares it, the masks by definition.
    const tasks::Image img = tasks::read_png(testing::fixture_path("saliency/" + files[k]));
    const Tensor x = tasks::image_to_nchw(img, kSide, kSide);
    EXPECT_EQ(x.shape(), (Shape{1, 3, kSide, kSide}));
    const std::vector<float> a = run_promoted(original, x).to_f32_vector();
    const std::vector<float> b = run_promoted(written, x).to_f32_vector();
    ASSERT_EQ(a.size(), static_cast<size_t>(kSide * kSide));
    double abs_sum = 0;
    int inter = 0, uni = 0, near_threshold = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      abs_sum += std::abs(double(a[i]) - b[i]);
      inter += a[i] > 0.5f && b[i] > 0.5f;
      uni += a[i] > 0.5f || b[i] > 0.5f;
      near_threshold += std::abs(a[i] - 0.5f) < 1e-4f || std::abs(b[i] - 0.5f) < 1e-4f;
    }
    const double mae = abs_sum / static_cast<double>(a.size());
    const double iou = uni ? double(inter) / uni : 1.0;
    // The verification's compressed graph and model.onnx hold the same Ŵ (f32,
    // cast to the stored f16, which tailor's runtime computes in f32).
    EXPECT_NEAR(s.inputs[k].mae, mae, 1e-6) << files[k];
    EXPECT_NEAR(s.inputs[k].iou, iou, (near_threshold + 1e-9) / std::max(uni, 1)) << files[k];
    EXPECT_GT(s.inputs[k].mae, 0.0) << files[k];  // the weights did change
    mae_mean += mae / 2;
  }
  EXPECT_NEAR(s.mae, mae_mean, 1e-6);
  ASSERT_TRUE(r.verification.metric.has_value());
  EXPECT_DOUBLE_EQ(r.verification.metric->compressed, s.iou);

  // report.json carries the same numbers, report.html the table.
  std::ifstream jf(dir.file("out/report.json"));
  const nlohmann::json j = nlohmann::json::parse(jf);
  const nlohmann::json& js = j.at("verification").at("saliency");
  EXPECT_EQ(js.at("output"), "Y");
  EXPECT_DOUBLE_EQ(js.at("iou").get<double>(), s.iou);
  EXPECT_DOUBLE_EQ(js.at("mae").get<double>(), s.mae);
  ASSERT_EQ(js.at("inputs").size(), 2u);
  EXPECT_EQ(js.at("inputs")[1].at("input"), "person.png");
  EXPECT_DOUBLE_EQ(js.at("inputs")[1].at("mae").get<double>(), s.inputs[1].mae);
  std::ifstream hf(dir.file("out/report.html"));
  const std::string html((std::istreambuf_iterator<char>(hf)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Saliency mask <code>Y</code>"), std::string::npos);
  EXPECT_NE(html.find("person.png"), std::string::npos);

  // The f16 original holds 2·numel bytes of weights; model.onnx must shrink
  // (int codes and f16 scales for the two planned convs).
  EXPECT_LT(fs::file_size(dir.file("out/model.onnx")), fs::file_size(model));

  // onnxruntime runs model.onnx (an f16 graph) like tailor's f32 runtime, up
  // to the f16 rounding of intermediates that onnxruntime keeps.
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const Tensor x = tasks::image_to_nchw(
      tasks::read_png(testing::fixture_path("saliency/person.png")), kSide, kSide);
  const std::vector<float> ours = run_promoted(written, x).to_f32_vector();
  const std::vector<float> ort =
      testing::run_ort(dir.file("out/model.onnx"), {{"X", x}}).at("Y").to_f32_vector();
  ASSERT_EQ(ours.size(), ort.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], ort[i], 2e-3) << i;
}

// Low-rank factors (f32) of f16 weights: model.onnx computes MatMul(A, B) in
// f32 and casts it to f16 for the f16 Conv; onnxruntime loads and runs it.
TEST(CompressSaliency, LowRankOfF16WeightsIsAValidGraph) {
  TempDir dir;
  const std::string model = dir.file("saliency.onnx");
  graph::write_onnx(saliency_graph(), model);
  compress::CompressOptions o = options(dir, model);
  o.schemes = {"dense", "lowrank"};
  o.budget = "60%";
  const compress::CompressResult r = compress::compress_model(o);
  int lowrank = 0;
  for (const auto& c : r.plan.choices) lowrank += c.label.rfind("lowrank-r", 0) == 0;
  EXPECT_GE(lowrank, 1);
  const graph::Model written = graph::import_onnx(dir.file("out/model.onnx"));
  // A MatMul of two f32 initializers (A, B), and every Conv weight either an
  // f16 initializer or the output of a Cast to f16 (ONNX code 10).
  const auto& g = written.graph;
  int factor_matmuls = 0;
  for (const graph::Node& n : g.nodes)
    if (n.op_type == "MatMul" && g.initializers.count(n.inputs.at(0)) &&
        g.initializers.count(n.inputs.at(1)) &&
        g.initializers.at(n.inputs[0]).dtype() == DType::f32)
      ++factor_matmuls;
  EXPECT_EQ(factor_matmuls, lowrank);
  for (const graph::Node& n : g.nodes) {
    if (n.op_type != "Conv") continue;
    const std::string& w = n.inputs.at(1);
    bool ok = g.initializers.count(w) && g.initializers.at(w).dtype() == DType::f16;
    for (const graph::Node& c : g.nodes)
      if (c.op_type == "Cast" && c.outputs.at(0) == w && c.attr_int("to", 0) == 10) ok = true;
    EXPECT_TRUE(ok) << n.name << ": weight " << w << " is not f16";
  }
  ASSERT_TRUE(r.verification.saliency.has_value());
  EXPECT_LT(r.standard_vs_tailor_max_abs, 1e-5);
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const Tensor x = tasks::image_to_nchw(tasks::read_png(testing::fixture_path("saliency/ball.png")),
                                        kSide, kSide);
  const std::vector<float> ours = run_promoted(written, x).to_f32_vector();
  const std::vector<float> ort =
      testing::run_ort(dir.file("out/model.onnx"), {{"X", x}}).at("Y").to_f32_vector();
  ASSERT_EQ(ours.size(), ort.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], ort[i], 2e-3) << i;
}

// A dense plan changes nothing: by definition MAE 0 and IoU 1.
TEST(CompressSaliency, DensePlanGivesIdenticalMasks) {
  TempDir dir;
  const std::string model = dir.file("saliency.onnx");
  graph::write_onnx(saliency_graph(), model);
  compress::CompressOptions o = options(dir, model);
  o.budget = "100%";
  o.schemes = {"dense"};
  o.task = "saliency";
  const compress::CompressResult r = compress::compress_model(o);
  ASSERT_TRUE(r.verification.saliency.has_value());
  for (const report::MaskScore& m : r.verification.saliency->inputs) {
    EXPECT_EQ(m.mae, 0.0) << m.input;
    EXPECT_EQ(m.iou, 1.0) << m.input;
  }
}

// Explicit --task saliency on a two-channel output is refused by name; auto
// does not pick saliency there.
TEST(CompressSaliency, TwoChannelOutputIsNotAMask) {
  TempDir dir;
  const std::string model = dir.file("two.onnx");
  graph::write_onnx(saliency_graph(2), model);
  compress::CompressOptions o = options(dir, model);
  o.budget = "100%";
  o.schemes = {"dense"};
  o.task = "saliency";
  testing::expect_error_naming([&] { compress::compress_model(o); }, model, "N×1×H×W");
  o.task = "auto";
  EXPECT_FALSE(compress::compress_model(o).verification.saliency.has_value());
}

}  // namespace
}  // namespace tailor
