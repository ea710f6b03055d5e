// The kernel variant of compressed layers (issue 16 item 1): the space offers
// "kernel_variant:<layer>" exactly on named layers of per-channel int8 codes,
// the applier writes the node attribute, the runtime then computes what the
// int8-a8 weight of the same dense weight computes, the cost model moves the
// layer's FLOPs to the W8A8 term, and the harness's tolerance decides whether
// the approximate variant may be timed at all.
#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/schemes/registry.h"
#include "tailor/tune/cost_model.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/record.h"
#include "tailor/tune/space.h"
#include "tailor/tune/tune.h"
#include "test_util.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

using testing::declare_input;
using testing::make_node;
using testing::random_tensor;

std::shared_ptr<const schemes::Encoded> encode(const char* label, const Shape& w_shape,
                                               uint64_t seed) {
  const Tensor w = random_tensor(w_shape, seed);
  return schemes::parse_scheme(label).encode(
      w.reshape({w_shape[0], shape_numel(w_shape) / w_shape[0]}));
}

graph::Node compressed_conv(const std::string& name, const std::string& in, const std::string& out,
                            std::shared_ptr<const schemes::Encoded> e, int64_t k) {
  graph::Node n = make_node("CompressedConv", name, {in}, {out},
                            {{"weight", graph::Attribute::of_encoded(std::move(e))},
                             {"kernel_shape", graph::Attribute::of_ints({k, k})},
                             {"pads", graph::Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})}});
  n.domain = "ai.tailor";
  return n;
}

// x [1, 16, 12, 12] → a: int8 1×1 16→32 → Relu → b: int8 3×3 32→16 →
// c: int4-g32 1×1 16→16 → (unnamed) int8 1×1 16→8 → y [1, 8, 12, 12].
// `b_weight` replaces b's (the int8-a8 twin of the test below).
graph::Model compressed_chain(std::shared_ptr<const schemes::Encoded> b_weight = nullptr) {
  graph::Model m;
  m.opset = 13;
  m.source = "compressed_chain";
  declare_input(m, "x", {1, 16, 12, 12});
  if (!b_weight) b_weight = encode("int8", {16, 32, 3, 3}, 2);
  m.graph.nodes = {compressed_conv("a", "x", "va", encode("int8", {32, 16, 1, 1}, 1), 1),
                   make_node("Relu", "r", {"va"}, {"vr"}),
                   compressed_conv("b", "vr", "vb", b_weight, 3),
                   compressed_conv("c", "vb", "vc", encode("int4-g32", {16, 16, 1, 1}, 3), 1),
                   compressed_conv("", "vc", "y", encode("int8", {8, 16, 1, 1}, 4), 1)};
  m.graph.outputs = {"y"};
  return m;
}

DecisionSpace space_of(const graph::Model& m) {
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  return build_space(m, shapes, runtime::default_pass_options(), SpaceOptions{});
}

// The names of s's kernel_variant decisions, each checked to offer `choices`
// with the first as its default.
std::vector<std::string> variant_decisions(const DecisionSpace& s,
                                           const std::vector<std::string>& choices) {
  std::vector<std::string> names;
  for (const auto& d : s.decisions)
    if (d.kind == "kernel_variant") {
      names.push_back(d.name);
      EXPECT_EQ(d.choices, choices) << d.name;
      EXPECT_EQ(d.default_choice, 0) << d.name;
    }
  return names;
}

TEST(TuneKernelVariant, OfferedOnNamedPerChannelInt8LayersAndAppliedAsTheInt8A8Kernel) {
  const graph::Model m = compressed_chain();
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  const DecisionSpace s = space_of(m);
  // Not c (int4-g32 codes), not the unnamed int8 layer.
  EXPECT_EQ(variant_decisions(s, {"weight_only", "w8a8"}),
            (std::vector<std::string>{"kernel_variant:a", "kernel_variant:b"}));

  Applier applier(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  const AppliedConfiguration dflt = applier.apply(c);
  for (const auto& n : dflt.model.graph.nodes) EXPECT_EQ(n.find("kernel_variant"), nullptr);
  c[static_cast<size_t>(s.find("kernel_variant:b"))] = 1;
  const AppliedConfiguration w8a8 = applier.apply(c);
  std::map<std::string, std::string> set;
  for (const auto& n : w8a8.model.graph.nodes)
    if (n.find("kernel_variant")) set[n.name] = n.attr_string("kernel_variant", "");
  EXPECT_EQ(set, (std::map<std::string, std::string>{{"b", "w8a8"}}));

  // The same model with b's weight encoded int8-a8 from the same dense
  // weight (the same codes), under the default configuration: bit for bit.
  const graph::Model twin_model = compressed_chain(encode("int8-a8", {16, 32, 3, 3}, 2));
  Applier twin_applier(twin_model, s, runtime::default_pass_options());
  const AppliedConfiguration twin = twin_applier.apply(s.default_configuration());
  const auto in = random_inputs(m, {}, 5);
  runtime::Executor e0(dflt.model), e1(w8a8.model), e2(twin.model);
  const Tensor y0 = e0.run(in).at("y"), y1 = e1.run(in).at("y"), y2 = e2.run(in).at("y");
  EXPECT_EQ(y1.to_f32_vector(), y2.to_f32_vector());
  EXPECT_NE(y1.to_f32_vector(), y0.to_f32_vector());

  // The cost model's terms by hand (2·MACs / 1e7, one thread): a 32·16·144,
  // b 16·288·144, c 16·16·144, the unnamed layer 8·16·144.
  const auto& f = feature_names();
  const auto term = [&](const char* name) {
    return static_cast<size_t>(std::find(f.begin(), f.end(), name) - f.begin());
  };
  const size_t packed = term("packed_weight_flops_1e7_per_thread");
  const size_t a8 = term("w8a8_flops_1e7_per_thread");
  ASSERT_LT(a8, f.size());
  const double fa = 2.0 * 32 * 16 * 144, fb = 2.0 * 16 * 288 * 144, fc = 2.0 * 16 * 16 * 144,
               fd = 2.0 * 8 * 16 * 144;
  const MachineInfo machine;
  const std::vector<double> t0 = graph_features(dflt.model, 1, shapes, machine);
  const std::vector<double> t1 = graph_features(w8a8.model, 1, shapes, machine);
  // b's packed codes run Winograd where the dense rule takes it for its
  // 12×12 plane (AVX-512 products: from 8×8), as the op does: Winograd's term.
  namespace k = runtime::kernels;
  k::Conv2dParams pb;
  pb.c_in = 32, pb.c_out = 16, pb.h = pb.w = 12, pb.kh = pb.kw = 3;
  pb.pad_top = pb.pad_left = pb.pad_bottom = pb.pad_right = 1;
  const bool b_wino = k::conv_default_algorithm(pb) == k::ConvAlgorithm::winograd;
  const size_t wino = term("winograd_flops_1e7_per_thread");
  EXPECT_NEAR(t0[packed], (fa + (b_wino ? 0.0 : fb) + fc + fd) / 1e7, 1e-12);
  EXPECT_NEAR(t0[wino], (b_wino ? fb : 0.0) / 1e7, 1e-12);
  EXPECT_NEAR(t0[a8], 0.0, 1e-12);
  EXPECT_NEAR(t1[packed], (fa + fc + fd) / 1e7, 1e-12);
  EXPECT_NEAR(t1[wino], 0.0, 1e-12);
  EXPECT_NEAR(t1[a8], fb / 1e7, 1e-12);
}

// x [1, 8, 10, 10] → a: Conv 3×3 8→16 (pads 1, bias) → Relu → d: depthwise
// 3×3 (group 16, pads 1) → b: Conv 1×1 16→4 → y [1, 4, 10, 10], all dense.
// `a_weight` writes a as a CompressedConv of those codes instead.
graph::Model dense_chain(std::shared_ptr<const schemes::Encoded> a_weight = nullptr) {
  graph::Model m;
  m.opset = 13;
  m.source = "dense_chain";
  declare_input(m, "x", {1, 8, 10, 10});
  auto& g = m.graph;
  g.add_initializer("wa", random_tensor({16, 8, 3, 3}, 21, -0.3f, 0.3f));
  g.add_initializer("ba", random_tensor({16}, 22));
  g.add_initializer("wd", random_tensor({16, 1, 3, 3}, 23));
  g.add_initializer("wb", random_tensor({4, 16, 1, 1}, 24));
  const auto pads = graph::Attribute::of_ints({1, 1, 1, 1});
  graph::Node a = make_node("Conv", "a", {"x", "wa", "ba"}, {"va"}, {{"pads", pads}});
  if (a_weight) {
    a = compressed_conv("a", "x", "va", a_weight, 3);
    a.inputs.push_back("ba");
  }
  g.nodes = {a, make_node("Relu", "r", {"va"}, {"vr"}),
             make_node("Conv", "d", {"vr", "wd"}, {"vd"},
                       {{"pads", pads}, {"group", graph::Attribute::of_int(16)}}),
             make_node("Conv", "b", {"vd", "wb"}, {"y"})};
  g.outputs = {"y"};
  return m;
}

TEST(TuneKernelVariant, DenseConvsTakeW8A8AsACompressedConvOfTheirInt8A8Codes) {
  const graph::Model m = dense_chain();
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  const DecisionSpace s = space_of(m);
  // Not the depthwise conv (groups 16: no W8A8 kernel).
  EXPECT_EQ(variant_decisions(s, {"dense", "w8a8"}),
            (std::vector<std::string>{"kernel_variant:a", "kernel_variant:b"}));

  Applier applier(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  const AppliedConfiguration dflt = applier.apply(c);
  for (const auto& n : dflt.model.graph.nodes) EXPECT_NE(n.op_type, "CompressedConv") << n.name;
  c[static_cast<size_t>(s.find("kernel_variant:a"))] = 1;
  const AppliedConfiguration w8a8 = applier.apply(c);
  // a's codes are int8-a8's of wa viewed [16, 72] (DESIGN.md's conv orientation).
  const std::shared_ptr<const schemes::Encoded> want =
      schemes::parse_scheme("int8-a8").encode(m.graph.initializers.at("wa").reshape({16, 72}));
  std::vector<std::string> compressed;
  for (const auto& n : w8a8.model.graph.nodes)
    if (n.op_type == "CompressedConv") {
      compressed.push_back(n.name);
      const auto& e = *n.find("weight")->encoded;
      EXPECT_EQ(e.label(), "int8-a8");
      EXPECT_EQ(e.factor("q").to_f32_vector(), want->factor("q").to_f32_vector());
      EXPECT_EQ(e.factor("scale").to_f32_vector(), want->factor("scale").to_f32_vector());
    }
  EXPECT_EQ(compressed, (std::vector<std::string>{"a"}));

  // The same model written with a as a CompressedConv of those codes, under
  // its own default configuration: bit for bit; and within 5% of the dense
  // output's largest magnitude, not equal to it.
  const graph::Model twin_model = dense_chain(want);
  const DecisionSpace ts = space_of(twin_model);
  const AppliedConfiguration twin =
      Applier(twin_model, ts, runtime::default_pass_options()).apply(ts.default_configuration());
  const auto in = random_inputs(m, {}, 5);
  runtime::Executor e0(dflt.model), e1(w8a8.model), e2(twin.model);
  const auto y0 = e0.run(in).at("y").to_f32_vector(), y1 = e1.run(in).at("y").to_f32_vector(),
             y2 = e2.run(in).at("y").to_f32_vector();
  EXPECT_EQ(y1, y2);
  EXPECT_NE(y1, y0);
  double scale = 0, largest = 0;
  for (size_t i = 0; i < y0.size(); ++i) {
    scale = std::max(scale, std::fabs(double(y0[i])));
    largest = std::max(largest, std::fabs(double(y1[i]) - y0[i]));
  }
  EXPECT_LT(largest, 0.05 * scale);

  // The cost model moves a's 2·MACs (16·72 per pixel, 100 pixels) to the W8A8 term.
  const auto& f = feature_names();
  const size_t a8 =
      static_cast<size_t>(std::find(f.begin(), f.end(), "w8a8_flops_1e7_per_thread") - f.begin());
  ASSERT_LT(a8, f.size());
  const MachineInfo machine;
  EXPECT_NEAR(graph_features(dflt.model, 1, shapes, machine)[a8], 0.0, 1e-12);
  EXPECT_NEAR(graph_features(w8a8.model, 1, shapes, machine)[a8], 2.0 * 16 * 72 * 100 / 1e7, 1e-12);
}

// x [1, 4, 6, 6] → Conv 1×1 4→4 per weight of `weights`, in a chain, named
// by `names`.
graph::Model conv_chain(const std::vector<Tensor>& weights, const std::vector<std::string>& names) {
  graph::Model m;
  m.opset = 13;
  m.source = "conv_chain";
  declare_input(m, "x", {1, 4, 6, 6});
  std::string in = "x";
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string w = "w" + std::to_string(i), out = i + 1 == weights.size() ? "y" : "v" + w;
    m.graph.add_initializer(w, weights[i]);
    m.graph.nodes.push_back(make_node("Conv", names[i], {in, w}, {out}));
    in = out;
  }
  m.graph.outputs = {"y"};
  return m;
}

TEST(TuneKernelVariant, DenseW8A8IsOfferedOnlyWhereInt8A8CodesHoldTheWeight) {
  // No decision, and the space builds, for: a row scale max|w|/127 past
  // f16's 65504 (int8-a8's encoder refuses it: 1e7·127 > 65504·127); a NaN
  // weight; rows zeroed by scales that round to 0 in f16 (max|w| ≤ 1e-8·127:
  // scales of at most 1e-8, under half f16's least subnormal 6e-8) in a
  // weight whose every row is that small. Offered: a zero row (exact), one
  // such row among rows of magnitude 1 (nearly dead: under 1e-3 of the
  // largest), the largest scale f16 holds, and a row whose scale is a
  // subnormal that rounds down (max|w| 1e-5: 7.87e-8 → 5.96e-8), whose
  // largest element codes to 127 instead of 168: the check judges that.
  Tensor big = random_tensor({4, 4, 1, 1}, 31), nan = random_tensor({4, 4, 1, 1}, 32);
  big.mutable_data<float>()[5] = 1e7f * 127.0f;
  nan.mutable_data<float>()[3] = std::nanf("");
  const Tensor tiny = random_tensor({4, 4, 1, 1}, 35, -1e-8f * 127, 1e-8f * 127);
  Tensor dead = random_tensor({4, 4, 1, 1}, 37);
  for (int64_t i = 0; i < 4; ++i) dead.mutable_data<float>()[i] = tiny.data<float>()[i];
  for (int64_t i = 4; i < 8; ++i) dead.mutable_data<float>()[i] = 0.0f;
  dead.mutable_data<float>()[8] = 1.0f;
  Tensor subnormal = random_tensor({4, 4, 1, 1}, 36);
  for (int64_t i = 0; i < 4; ++i) subnormal.mutable_data<float>()[i] = i == 1 ? 1e-5f : 1e-6f;
  Tensor edge = random_tensor({4, 4, 1, 1}, 34);
  edge.mutable_data<float>()[0] = 65504.0f * 127.0f;  // the largest scale f16 holds
  EXPECT_EQ(
      variant_decisions(space_of(conv_chain({big, nan, tiny, dead, subnormal, edge},
                                            {"big", "nan", "tiny", "dead", "subnormal", "edge"})),
                        {"dense", "w8a8"}),
      (std::vector<std::string>{"kernel_variant:dead", "kernel_variant:subnormal",
                                "kernel_variant:edge"}));
  EXPECT_NO_THROW(schemes::parse_scheme("int8-a8").encode(edge.reshape({4, 4})));
  // A conv of no output channels (the runtime refuses to run one, so the
  // space is built without observed shapes): no decision either.
  const graph::Model empty = conv_chain({Tensor::zeros(DType::f32, {0, 4, 1, 1})}, {"empty"});
  EXPECT_EQ(variant_decisions(build_space(empty, {}, runtime::default_pass_options(), {}),
                              {"dense", "w8a8"}),
            std::vector<std::string>{});
  EXPECT_THROW(schemes::parse_scheme("int8-a8").encode(big.reshape({4, 4})), Error);
  // The tiny rows' codes are all 0; the subnormal row's largest is clipped.
  for (float q :
       schemes::parse_scheme("int8-a8").encode(tiny.reshape({4, 4}))->factor("q").to_f32_vector())
    EXPECT_EQ(q, 0.0f);
  const auto sub = schemes::parse_scheme("int8-a8").encode(subnormal.reshape({4, 4}));
  EXPECT_EQ(sub->factor("q").to_f32_vector()[1], 127.0f);
  EXPECT_NEAR(double(sub->factor("scale").to_f32_vector()[0]), 5.96e-8, 1e-10);
}

TEST(TuneKernelVariant, ConvsOfOneNameGetDecisionsOfTheirOwn) {
  // Two Convs named "same" (node 0 and node 1): the second is conv#1, and
  // taking W8A8 on it replaces that conv only.
  const graph::Model m = conv_chain(
      {random_tensor({4, 4, 1, 1}, 41), random_tensor({4, 4, 1, 1}, 42)}, {"same", "same"});
  const DecisionSpace s = space_of(m);
  EXPECT_EQ(variant_decisions(s, {"dense", "w8a8"}),
            (std::vector<std::string>{"kernel_variant:same", "kernel_variant:conv#1"}));
  // A Conv named as a generated name would be: a real "conv#1" (node 0) and
  // an unnamed conv at node 1, which becomes conv#1#2; then a duplicate of
  // "conv#1" at node 2, which becomes conv#2.
  const graph::Model clash =
      conv_chain({random_tensor({4, 4, 1, 1}, 43), random_tensor({4, 4, 1, 1}, 44),
                  random_tensor({4, 4, 1, 1}, 45)},
                 {"conv#1", "", "conv#1"});
  EXPECT_EQ(variant_decisions(space_of(clash), {"dense", "w8a8"}),
            (std::vector<std::string>{"kernel_variant:conv#1", "kernel_variant:conv#1#2",
                                      "kernel_variant:conv#2"}));
  Configuration c = s.default_configuration();
  c[static_cast<size_t>(s.find("kernel_variant:conv#1"))] = 1;
  const AppliedConfiguration a = Applier(m, s, runtime::default_pass_options()).apply(c);
  std::vector<std::string> ops;
  for (const auto& n : a.model.graph.nodes) ops.push_back(n.name + ":" + n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"same:Conv", "conv#1:CompressedConv"}));
}

TEST(TuneKernelVariant, EachSetOfW8A8ConvsIsItsOwnGraph) {
  // Convs "a", "b" and "a|b": W8A8 on a and b, then on a|b alone, are two
  // graphs, not one cached under one key.
  const graph::Model m =
      conv_chain({random_tensor({4, 4, 1, 1}, 51), random_tensor({4, 4, 1, 1}, 52),
                  random_tensor({4, 4, 1, 1}, 53)},
                 {"a", "b", "a|b"});
  const DecisionSpace s = space_of(m);
  Applier applier(m, s, runtime::default_pass_options());
  const auto compressed = [&](const std::vector<std::string>& names) {
    Configuration c = s.default_configuration();
    for (const auto& name : names) c[static_cast<size_t>(s.find("kernel_variant:" + name))] = 1;
    std::vector<std::string> out;
    for (const auto& n : applier.apply(c).model.graph.nodes)
      if (n.op_type == "CompressedConv") out.push_back(n.name);
    return out;
  };
  EXPECT_EQ(compressed({"a", "b"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(compressed({"a|b"}), (std::vector<std::string>{"a|b"}));
}

TEST(TuneKernelVariant, AConstantFedWeightTakesW8A8WithFoldOff) {
  // x → Conv "c" whose weight is a Constant node's output (as the PP-OCR
  // files hold theirs): with fold off the weight stays that node's, and W8A8
  // still replaces the conv, by the same codes as with fold on.
  graph::Model m;
  m.opset = 13;
  m.source = "constant_fed";
  declare_input(m, "x", {1, 4, 6, 6});
  m.graph.nodes = {
      make_node("Constant", "k", {}, {"w"},
                {{"value", graph::Attribute::of_tensor(random_tensor({4, 4, 1, 1}, 61))}}),
      make_node("Conv", "c", {"x", "w"}, {"y"})};
  m.graph.outputs = {"y"};
  const DecisionSpace s = space_of(m);
  ASSERT_EQ(variant_decisions(s, {"dense", "w8a8"}),
            (std::vector<std::string>{"kernel_variant:c"}));
  Applier applier(m, s, runtime::default_pass_options());
  std::vector<std::vector<float>> codes;
  for (int fold : {1, 0}) {
    Configuration c = s.default_configuration();
    c[static_cast<size_t>(s.find("kernel_variant:c"))] = 1;
    c[static_cast<size_t>(s.find("pass:fold"))] = fold;
    for (const auto& n : applier.apply(c).model.graph.nodes)
      if (n.name == "c") {
        EXPECT_EQ(n.op_type, "CompressedConv") << "fold " << fold;
        if (const graph::Attribute* w = n.find("weight"))
          codes.push_back(w->encoded->factor("q").to_f32_vector());
      }
  }
  ASSERT_EQ(codes.size(), 2u);
  EXPECT_EQ(codes[0], codes[1]);
}

TEST(TuneKernelVariant, TheToleranceDecidesWhetherW8A8IsTimed) {
  const graph::Model m = compressed_chain();
  const DecisionSpace s = space_of(m);
  Applier applier(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  c[static_cast<size_t>(s.find("kernel_variant:a"))] = 1;
  c[static_cast<size_t>(s.find("kernel_variant:b"))] = 1;
  const AppliedConfiguration applied = applier.apply(c);
  HarnessOptions strict;
  strict.repeats = 1;
  const Measurement refused = Harness(m, {}, 1, strict).check(applied);
  EXPECT_FALSE(refused.ok);
  EXPECT_GT(refused.max_rel_error, strict.tolerance);
  // Rounding the activations to 8 bits moves the output by well under 10%
  // of its scale here; a tolerance that admits that times the candidate.
  EXPECT_LT(refused.max_rel_error, 0.1);
  HarnessOptions loose = strict;
  loose.tolerance = 0.1;
  const Harness harness(m, {}, 1, loose);
  const Measurement timed = harness.check(applied);
  EXPECT_TRUE(timed.ok) << timed.error;
  EXPECT_EQ(timed.max_rel_error, refused.max_rel_error);
  // The error by hand on the harness's input: the largest and the mean
  // deviation over the reference's largest magnitude (--error max, mean).
  const std::vector<float> want =
      runtime::Executor(m).run(harness.inputs()).at("y").to_f32_vector();
  const std::vector<float> got =
      runtime::Executor(applied.model).run(harness.inputs()).at("y").to_f32_vector();
  double scale = 0, largest = 0, sum = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(double(want[i])));
    largest = std::max(largest, std::fabs(double(got[i]) - want[i]));
    sum += std::fabs(double(got[i]) - want[i]);
  }
  EXPECT_NEAR(timed.max_rel_error, largest / scale, 1e-12);
  HarnessOptions mean = loose;
  mean.error = "mean";
  const Measurement averaged = Harness(m, {}, 1, mean).check(applied);
  EXPECT_NEAR(averaged.max_rel_error, sum / double(want.size()) / scale, 1e-12);
  EXPECT_LT(averaged.max_rel_error, timed.max_rel_error);
  mean.error = "rms";
  testing::expect_error_naming([&] { Harness(m, {}, 1, mean); }, "--error", "max or mean");
}

// The gradient method's screen (search_gradient) on a real model: every
// W8A8 choice alone on the default is checked once, measured by another
// method or else screened (never timed, recorded apart); each screened error
// is the harness's check of that configuration; the gradient's tuning time
// includes the screen; the record keeps it, replays, and an older record
// (no "screen", no "screened") reads as made without it.
TEST(TuneKernelVariant, TheGradientScreensEachW8A8ChoiceAloneOnceAndTheRecordKeepsIt) {
  const graph::Model m = compressed_chain();
  TuneOptions o;
  o.measurements = 4;  // greedy measures only the first decisions' singles
  o.harness.repeats = 1;
  o.harness.error = "mean";
  o.harness.tolerance = 0.1;
  o.paired_rounds = 1;
  o.threads = 1;
  const TuneRecord rec = tune_model(m, o);
  EXPECT_TRUE(rec.gradient.screen);
  std::map<std::string, const MeasuredConfiguration*> measured, screened;
  for (const auto& x : rec.measured) measured[x.key] = &x;
  for (const auto& x : rec.screened) {
    EXPECT_TRUE(screened.emplace(x.key, &x).second) << "screened twice: " << x.key;
    EXPECT_TRUE(x.times_ms.empty());
    // Measured later by a method (as timing leads it): the same check.
    if (const auto it = measured.find(x.key); it != measured.end()) {
      EXPECT_EQ(it->second->ok, x.ok) << x.key;
      EXPECT_EQ(it->second->max_rel_error, x.max_rel_error) << x.key;
    }
  }
  const DecisionSpace& s = rec.space;
  const Harness harness(m, {}, o.seed, rec.harness);
  Applier applier(m, s, runtime::default_pass_options());
  size_t singles = 0;
  for (size_t d = 0; d < s.decisions.size(); ++d) {
    if (s.decisions[d].kind != "kernel_variant") continue;
    ++singles;
    Configuration c = s.default_configuration();
    c[d] = 1;
    const std::string key = DecisionSpace::key(c);
    ASSERT_TRUE(measured.count(key) || screened.count(key)) << s.decisions[d].name;
    if (screened.count(key)) {
      const Measurement want = harness.check(applier.apply(c));
      EXPECT_EQ(screened[key]->max_rel_error, want.max_rel_error) << s.decisions[d].name;
      EXPECT_EQ(screened[key]->ok, want.ok);
    }
  }
  EXPECT_EQ(singles, 2u);  // a and b (c is int4-g32; the last is unnamed)
  EXPECT_FALSE(rec.screened.empty());
  double screen_s = 0;
  for (const auto& x : rec.screened) screen_s += x.cost_s;
  for (const MethodRow& row : rec.table)
    if (row.method == "gradient") {
      EXPECT_GE(row.tuning_s, screen_s);
    }
  EXPECT_EQ(replay(m, rec), rec.chosen.config);

  nlohmann::json j = rec;
  const TuneRecord back = j.get<TuneRecord>();
  ASSERT_EQ(back.screened.size(), rec.screened.size());
  for (size_t i = 0; i < rec.screened.size(); ++i)
    EXPECT_EQ(back.screened[i].key, rec.screened[i].key);
  EXPECT_TRUE(back.gradient.screen);
  j["gradient"].erase("screen");
  j.erase("screened");
  const TuneRecord old = j.get<TuneRecord>();
  EXPECT_FALSE(old.gradient.screen);
  EXPECT_TRUE(old.screened.empty());
  // Screened checks that contradict the screen or themselves are refused.
  const nlohmann::json good = nlohmann::json(rec)["screened"][0];
  auto timed = good, twice = good, past = good, negative = good, other = good;
  timed["times_ms"] = {1.0};
  past["check"] = {{"ok", true}, {"max_rel_error", 0.5}};
  negative["check"] = {{"ok", false}, {"max_rel_error", -1.0}, {"error", "x"}};
  other["config"] = j["measured"][0]["config"];  // the default itself
  other["key"] = j["measured"][0]["key"];
  const std::vector<std::pair<nlohmann::json, std::string>> refused = {
      {nlohmann::json::array({timed}), "screened[0]: a screened configuration is never timed"},
      {nlohmann::json::array({good, twice}),
       "screened[1]: configuration " + good["key"].get<std::string>() + " is screened twice"},
      {nlohmann::json::array({past}), "screened[0]: \"ok\" but \"max_rel_error\" is past"},
      {nlohmann::json::array({negative}), "screened[0]: \"max_rel_error\" must be >= 0"},
      {nlohmann::json::array({other}),
       "screened[0]: a screened configuration is one "
       "approximate choice on the default"},
      {nlohmann::json::object(), "\"screened\" must be an array"}};
  for (const auto& [list, message] : refused) {
    j["screened"] = list;
    testing::expect_error_naming([&] { (void)j.get<TuneRecord>(); }, "decision record", message);
  }
  j["screened"] = nlohmann::json::array();
  j["gradient"] = 5;
  testing::expect_error_naming([&] { (void)j.get<TuneRecord>(); }, "decision record",
                               "\"gradient\" must be an object");
}

}  // namespace
}  // namespace tailor::tune
