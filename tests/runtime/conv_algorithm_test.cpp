// The per-node conv algorithm override (node attribute "conv_algorithm", the
// tuner's decision) reaches conv2d's one selection point: forcing the
// implicit GEMM on a Winograd-eligible conv gives the TAILOR_CONV_WINOGRAD=0
// run bit for bit, forcing Winograd gives the default run; "threads" = 1
// changes no bit; ineligible or unknown choices are one-line Errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime {
namespace {

Tensor random_tensor(Shape shape, uint64_t seed) {
  Rng rng(seed);
  Tensor t = Tensor::zeros(DType::f32, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.uniform(-1, 1));
  return t;
}

// x [1, c, hw, hw] → Conv 3×3 (c→c, pads 1, stride `stride`, bias) → y, the
// conv carrying `attrs` besides its ONNX ones.
graph::Model conv_model(int64_t c, int64_t hw, int64_t stride,
                        const std::map<std::string, graph::Attribute>& attrs) {
  graph::Model m;
  m.opset = 13;
  m.source = "conv_algorithm_test";
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, c, hw, hw})};
  m.graph.add_initializer("w", random_tensor({c, c, 3, 3}, 2));
  m.graph.add_initializer("b", random_tensor({c}, 3));
  graph::Node n;
  n.op_type = "Conv";
  n.name = "conv";
  n.inputs = {"x", "w", "b"};
  n.outputs = {"y"};
  n.attributes = {{"pads", graph::Attribute::of_ints({1, 1, 1, 1})},
                  {"strides", graph::Attribute::of_ints({stride, stride})}};
  for (const auto& [k, v] : attrs) n.attributes.emplace_back(k, v);
  m.graph.nodes = {n};
  m.graph.outputs = {"y"};
  return m;
}

Tensor run(const graph::Model& m, int64_t c, int64_t hw) {
  Executor e(m);
  return e.run({{"x", random_tensor({1, c, hw, hw}, 1)}}).at("y");
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.data<float>(), b.data<float>(), sizeof(float) * a.numel()) == 0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    d = std::max(d, std::fabs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return d;
}

graph::Attribute algo(const std::string& s) {
  return graph::Attribute::of_string(s);
}

// Sets TAILOR_CONV_WINOGRAD=0 for its scope, restoring the previous value.
class WinogradOff {
 public:
  WinogradOff() {
    if (const char* v = std::getenv("TAILOR_CONV_WINOGRAD")) saved_ = v;
    setenv("TAILOR_CONV_WINOGRAD", "0", 1);
  }
  ~WinogradOff() {
    if (saved_)
      setenv("TAILOR_CONV_WINOGRAD", saved_->c_str(), 1);
    else
      unsetenv("TAILOR_CONV_WINOGRAD");
  }

 private:
  std::optional<std::string> saved_;
};

TEST(ConvAlgorithm, OverrideOnAWinogradConvMatchesTheGlobalSwitch) {
  // 16 channels, a 20×20 output plane: the automatic rule takes Winograd.
  const int64_t c = 16, hw = 20;
  unsetenv("TAILOR_CONV_WINOGRAD");
  const Tensor dflt = run(conv_model(c, hw, 1, {}), c, hw);
  const Tensor forced_wino =
      run(conv_model(c, hw, 1, {{"conv_algorithm", algo("winograd")}}), c, hw);
  const Tensor forced_gemm = run(conv_model(c, hw, 1, {{"conv_algorithm", algo("gemm")}}), c, hw);
  Tensor switched_off;
  {
    WinogradOff off;
    switched_off = run(conv_model(c, hw, 1, {}), c, hw);
    // A forced choice is not subject to the switch.
    EXPECT_TRUE(
        bit_equal(run(conv_model(c, hw, 1, {{"conv_algorithm", algo("winograd")}}), c, hw), dflt));
  }
  EXPECT_TRUE(bit_equal(forced_wino, dflt));
  EXPECT_TRUE(bit_equal(forced_gemm, switched_off));
  // The two algorithms round differently (so the override did change the
  // kernel) and agree to float accuracy.
  EXPECT_FALSE(bit_equal(forced_gemm, forced_wino));
  EXPECT_LT(max_abs_diff(forced_gemm, forced_wino), 1e-4);
  EXPECT_TRUE(
      bit_equal(run(conv_model(c, hw, 1, {{"conv_algorithm", algo("auto")}}), c, hw), dflt));
}

TEST(ConvAlgorithm, WinogradCanBeForcedBelowTheRulesPlaneSize) {
  // A plane one below the rule's side (registry.h: winograd_min_plane, 16
  // or 8): the rule takes the implicit GEMM; Winograd still applies.
  const int64_t c = 16, hw = tailor::runtime::kernels::active_kernels().winograd_min_plane - 1;
  unsetenv("TAILOR_CONV_WINOGRAD");
  const Tensor dflt = run(conv_model(c, hw, 1, {}), c, hw);
  EXPECT_TRUE(
      bit_equal(run(conv_model(c, hw, 1, {{"conv_algorithm", algo("gemm")}}), c, hw), dflt));
  const Tensor wino = run(conv_model(c, hw, 1, {{"conv_algorithm", algo("winograd")}}), c, hw);
  EXPECT_FALSE(bit_equal(wino, dflt));
  EXPECT_LT(max_abs_diff(wino, dflt), 1e-4);
}

TEST(ConvAlgorithm, WinogradOnAWeightNotPackedAtLoad) {
  // The weight a graph input, not an initializer: nothing is packed at
  // load, so a forced Winograd transforms it on the call and gives the bits
  // of the packed run; gemm gives the implicit GEMM's.
  const int64_t c = 16, hw = 20;
  const auto fed = [&](const std::string& a) {
    graph::Model m = conv_model(c, hw, 1, {{"conv_algorithm", algo(a)}});
    m.graph.initializers.erase("w");
    std::erase(m.graph.initializer_order, "w");
    m.graph.inputs.push_back("w");
    m.graph.types["w"] = graph::ValueType{DType::f32, graph::sym_shape_of({c, c, 3, 3})};
    Executor e(m);
    return e.run({{"x", random_tensor({1, c, hw, hw}, 1)}, {"w", random_tensor({c, c, 3, 3}, 2)}})
        .at("y");
  };
  const Tensor packed_wino =
      run(conv_model(c, hw, 1, {{"conv_algorithm", algo("winograd")}}), c, hw);
  const Tensor packed_gemm = run(conv_model(c, hw, 1, {{"conv_algorithm", algo("gemm")}}), c, hw);
  EXPECT_TRUE(bit_equal(fed("winograd"), packed_wino));
  EXPECT_TRUE(bit_equal(fed("gemm"), packed_gemm));
  EXPECT_FALSE(bit_equal(packed_wino, packed_gemm));
}

TEST(ConvAlgorithm, OneThreadAttributeChangesNoBit) {
  const int64_t c = 16, hw = 20;
  EXPECT_TRUE(
      bit_equal(run(conv_model(c, hw, 1, {{"threads", graph::Attribute::of_int(1)}}), c, hw),
                run(conv_model(c, hw, 1, {}), c, hw)));
}

TEST(ConvAlgorithm, IneligibleOrUnknownChoicesAreErrors) {
  // Stride 2: no Winograd.
  try {
    run(conv_model(16, 20, 2, {{"conv_algorithm", algo("winograd")}}), 16, 20);
    FAIL() << "forced Winograd on a stride-2 conv ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_algorithm=winograd"), std::string::npos) << e.what();
  }
  // 4 channels: too few for the transforms (no Winograd weights are packed).
  EXPECT_THROW(run(conv_model(4, 20, 1, {{"conv_algorithm", algo("winograd")}}), 4, 20), Error);
  EXPECT_THROW(run(conv_model(16, 20, 1, {{"conv_algorithm", algo("fft")}}), 16, 20), Error);
  EXPECT_THROW(run(conv_model(16, 20, 1, {{"threads", graph::Attribute::of_int(3)}}), 16, 20),
               Error);
}

}  // namespace
}  // namespace tailor::runtime
