// The elementwise-group fusion (src/graph/passes/fuse_elementwise.h): structure, and
// outputs against the unfused graph and hand-derived values.
#include <cmath>
#include <tuple>

#include "pass_test_util.h"
#include "tailor/graph/shape_inference.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(FuseElementwise, ElementwiseGroupIsOneKernelWithBroadcasting) {
  // y = HardSigmoid(x·scale[C,1,1] + 0.5) · x − Relu(z): one node, inputs x, scale, z.
  GraphBuilder b;
  b.input("x", {1, 3, 2, 2})
      .input("z", {1, 1, 2, 2})
      .init("scale", vec_f32({3, 1, 1}, {1, -2, 3}))
      .init("half", scalar_f32(0.5f));
  b.node("Mul", {"x", "scale"}, {"a"})
      .node("Add", {"a", "half"}, {"c"})
      .node("HardSigmoid", {"c"}, {"h"});
  b.node("Mul", {"h", "x"}, {"p"})
      .node("Relu", {"z"}, {"rz"})
      .node("Sub", {"p", "rz"}, {"y"})
      .output("y");
  std::vector<float> xv(12), zv = {-1, 2, -3, 4};
  for (size_t i = 0; i < 12; ++i) xv[i] = 0.25f * static_cast<float>(i) - 1.5f;
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 3, 2, 2}, xv)},
                                                   {"z", vec_f32({1, 1, 2, 2}, zv)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedElementwise");
  EXPECT_EQ(out.graph.nodes[0].inputs.size(), 3u);
  std::vector<float> want;
  const float sc[3] = {1, -2, 3};
  for (size_t i = 0; i < 12; ++i) {
    const float x = xv[i], h = std::max(0.f, std::min(1.f, 0.2f * (x * sc[i / 4] + 0.5f) + 0.5f));
    want.push_back(h * x - std::max(0.f, zv[i % 4]));
  }
  expect_f32(run_model(out, feeds).at("y"), {1, 3, 2, 2}, want, 1e-6f);
}

TEST(FuseElementwise, ElementwiseGroupOverLargeSameShapeInputsSplitsIntoBlocks) {
  // 70001 elements: several blocks and a short last one; same float ops as unfused.
  GraphBuilder b;
  b.input("x", {70001}).input("z", {70001}).init("half", scalar_f32(0.5f));
  b.node("Sigmoid", {"x"}, {"s"})
      .node("Mul", {"s", "z"}, {"m"})
      .node("Add", {"m", "half"}, {"y"})
      .output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({70001}, 40, -5, 5)},
                                                   {"z", random_f32({70001}, 41)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedElementwise");
}

// A Resize: nearest, asymmetric, floor, scales [1, 1, fh, fw] before `y = ... ` below.
GraphBuilder upsample_add(const std::string& mode, const std::string& transform,
                          std::vector<float> scales) {
  GraphBuilder b(13);
  b.input("lo", {2, 3, 2, 3})
      .input("hi", {2, 3, 4, 9})
      .init("roi", vec_f32({0}, {}))
      .init("scales", vec_f32({4}, scales))
      .init("bias", vec_f32({1, 3, 1, 1}, {0.5f, -1.f, 2.f}));
  b.node("Resize", {"lo", "roi", "scales"}, {"up"},
         {{"mode", graph::Attribute::of_string(mode)},
          {"coordinate_transformation_mode", graph::Attribute::of_string(transform)},
          {"nearest_mode", graph::Attribute::of_string("floor")}});
  b.node("Add", {"hi", "up"}, {"a"}).node("Mul", {"a", "bias"}, {"m"}).node("Relu", {"m"}, {"y"});
  b.output("y");
  return b;
}

std::map<std::string, Tensor> upsample_feeds() {
  return {{"lo", random_f32({2, 3, 2, 3}, 1)}, {"hi", random_f32({2, 3, 4, 9}, 2)}};
}

TEST(FuseElementwise, ANearestUpsamplingIsReadThroughItsFactorsBitForBit) {
  // The detector's FPN, Resize(2×) ─► Add, here 2× by 3× with a per-channel
  // operand and batch 2: one node whose "upsample" attribute reads `lo` as
  // pixel (y / 2, x / 3), equal bit for bit to the Resize and the Adds.
  const graph::Model out = check_passes(upsample_add("nearest", "asymmetric", {1, 1, 2, 3}).model(),
                                        {"fuse"}, upsample_feeds(), 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  const graph::Node& f = out.graph.nodes[0];
  EXPECT_EQ(f.op_type, "FusedElementwise");
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"lo", "hi", "bias"}));
  EXPECT_EQ(f.attr_ints("upsample", {}), (std::vector<int64_t>{2, 3, 1, 1, 1, 1}));
  graph::Model inferred = out;
  graph::infer_shapes(inferred);
  EXPECT_EQ(inferred.graph.type_of("y")->to_string(), "f32[2, 3, 4, 9]");
  // By hand: y[n, c, y, x] = Relu((hi + lo[n, c, y / 2, x / 3]) · bias[c]).
  const auto feeds = upsample_feeds();
  const std::vector<float> lo = feeds.at("lo").to_f32_vector(), hi = feeds.at("hi").to_f32_vector();
  const float bias[3] = {0.5f, -1.f, 2.f};
  std::vector<float> want;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 9; ++x) {
          const float v = hi[static_cast<size_t>(((n * 3 + c) * 4 + y) * 9 + x)] +
                          lo[static_cast<size_t>(((n * 3 + c) * 2 + y / 2) * 3 + x / 3)];
          want.push_back(std::max(0.f, v * bias[c]));
        }
  expect_f32(run_model(out, feeds).at("y"), {2, 3, 4, 9}, want, 0.f);
}

TEST(FuseElementwise, AnUpsampledGroupWithAnOperandBroadcastAlongRowsRunsRowByRow) {
  // `col` [1, 1, 1, 9] repeats down the rows (not a whole plane, not one
  // value): the kernel's row-by-row path.
  GraphBuilder b(13);
  b.input("lo", {1, 2, 2, 3})
      .input("col", {1, 1, 1, 9})
      .init("roi", vec_f32({0}, {}))
      .init("scales", vec_f32({4}, {1, 1, 2, 3}));
  b.node("Resize", {"lo", "roi", "scales"}, {"up"},
         {{"mode", graph::Attribute::of_string("nearest")},
          {"coordinate_transformation_mode", graph::Attribute::of_string("asymmetric")},
          {"nearest_mode", graph::Attribute::of_string("floor")}});
  b.node("Sub", {"up", "col"}, {"s"}).node("Tanh", {"s"}, {"y"});
  b.output("y");
  const auto feeds = std::map<std::string, Tensor>{{"lo", random_f32({1, 2, 2, 3}, 1)},
                                                   {"col", random_f32({1, 1, 1, 9}, 2)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].attr_ints("upsample", {}), (std::vector<int64_t>{2, 3, 1, 1}));
}

// A nearest 2× Resize (asymmetric, floor) of `x` into `y` (opset 13).
void nearest_resize(GraphBuilder& b, const std::string& x, const std::string& y,
                    const std::string& scales) {
  b.node("Resize", {x, "roi", scales}, {y},
         {{"mode", graph::Attribute::of_string("nearest")},
          {"coordinate_transformation_mode", graph::Attribute::of_string("asymmetric")},
          {"nearest_mode", graph::Attribute::of_string("floor")}});
}

TEST(FuseElementwise, UpsamplingCasesAnOutsideTesterFound) {
  // (1) The Resize's input computed in the group too (Relu read by the
  // Resize and the Add): the fused node read a value the group removed.
  {
    GraphBuilder b(13);
    b.input("a", {1, 3, 1, 1}).init("roi", vec_f32({0}, {})).init("s", vec_f32({4}, {1, 1, 2, 2}));
    b.node("Relu", {"a"}, {"x"});
    nearest_resize(b, "x", "u", "s");
    b.node("Add", {"u", "x"}, {"y"}).output("y");
    check_passes(b.model(), {"fuse"}, {{"a", random_f32({1, 3, 1, 1}, 1)}}, 0.0);
  }
  // (2) An upsampled value of one row (or column) broadcast down the rows
  // (along the columns) of the output.
  for (const bool rows : {true, false}) {
    SCOPED_TRACE(rows ? "rows" : "columns");
    const Shape xs = rows ? Shape{1, 2, 1, 3} : Shape{1, 2, 3, 1};
    const Shape bs = rows ? Shape{1, 2, 4, 6} : Shape{1, 2, 6, 5};
    GraphBuilder b(13);
    b.input("x", xs).input("b", bs).init("roi", vec_f32({0}, {}));
    b.init("s",
           vec_f32({4}, rows ? std::vector<float>{1, 1, 1, 2} : std::vector<float>{1, 1, 2, 1}));
    nearest_resize(b, "x", "u", "s");
    b.node("Add", {"u", "b"}, {"y"}).output("y");
    const graph::Model out = check_passes(
        b.model(), {"fuse"}, {{"x", random_f32(xs, 1)}, {"b", random_f32(bs, 2)}}, 0.0);
    EXPECT_EQ(out.graph.nodes.size(), 1u);
  }
  // (3) A rank-5 output: the Resize stays out (the kernel runs rank-4 planes).
  {
    GraphBuilder b(13);
    b.input("x", {1, 2, 3, 3}).input("b", {2, 1, 2, 6, 6}).init("roi", vec_f32({0}, {}));
    b.init("s", vec_f32({4}, {1, 1, 2, 2}));
    nearest_resize(b, "x", "u", "s");
    b.node("Add", {"u", "b"}, {"y"}).output("y");
    const graph::Model out = check_passes(
        b.model(), {"fuse"},
        {{"x", random_f32({1, 2, 3, 3}, 1)}, {"b", random_f32({2, 1, 2, 6, 6}, 2)}}, 0.0);
    EXPECT_EQ(count_ops(out.graph, "Resize"), 1u);
  }
}

TEST(FuseElementwise, OtherResizesStayOutsideTheGroup) {
  // Linear, half_pixel, a fractional scale: not a copy of input pixels.
  for (const auto& [mode, transform, scales] :
       std::vector<std::tuple<std::string, std::string, std::vector<float>>>{
           {"linear", "asymmetric", {1, 1, 2, 3}},
           {"nearest", "half_pixel", {1, 1, 2, 3}},
           {"nearest", "asymmetric", {1, 1, 2, 3.5f}}}) {
    SCOPED_TRACE(mode + " " + transform);
    GraphBuilder b = upsample_add(mode, transform, scales);
    if (scales[3] != 3) {  // 3.5 over 3 columns gives 10: another hi
      b = GraphBuilder(13);
      b.input("lo", {2, 3, 2, 3})
          .input("hi", {2, 3, 4, 10})
          .init("roi", vec_f32({0}, {}))
          .init("scales", vec_f32({4}, scales));
      b.node("Resize", {"lo", "roi", "scales"}, {"up"},
             {{"mode", graph::Attribute::of_string(mode)},
              {"coordinate_transformation_mode", graph::Attribute::of_string(transform)},
              {"nearest_mode", graph::Attribute::of_string("floor")}});
      b.node("Add", {"hi", "up"}, {"a"}).node("Relu", {"a"}, {"y"});
      b.output("y");
      const graph::Model out = check_passes(
          b.model(), {"fuse"},
          {{"lo", random_f32({2, 3, 2, 3}, 1)}, {"hi", random_f32({2, 3, 4, 10}, 2)}}, 0.0);
      EXPECT_EQ(count_ops(out.graph, "Resize"), 1u);
      continue;
    }
    const graph::Model out = check_passes(b.model(), {"fuse"}, upsample_feeds(), 0.0);
    EXPECT_EQ(count_ops(out.graph, "Resize"), 1u);
    ASSERT_EQ(out.graph.nodes.size(), 2u);
    EXPECT_EQ(out.graph.nodes[1].op_type, "FusedElementwise");
    EXPECT_EQ(out.graph.nodes[1].find("upsample"), nullptr);
  }
  // The upsampled value read elsewhere too: the Resize stays.
  GraphBuilder b = upsample_add("nearest", "asymmetric", {1, 1, 2, 3});
  b.output("up");
  const graph::Model out = check_passes(b.model(), {"fuse"}, upsample_feeds(), 0.0);
  EXPECT_EQ(count_ops(out.graph, "Resize"), 1u);
}

}  // namespace
}  // namespace tailor::testing
