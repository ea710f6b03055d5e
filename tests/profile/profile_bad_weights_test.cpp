// `tailor profile` on weights the encoders cannot take: NaN and ±Inf used to
// stop the run in LAPACK ("sgesdd failed (info -5)", naming neither file nor
// layer) and finite 3e38 weights with "scale overflows f16". Such a layer is
// named in a warning, kept dense (its one candidate, with the reason in
// profile.json) and the other layers are profiled as usual.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "tailor/core/rng.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/onnx.h"
#include "tailor/profile/model_profile.h"
#include "test_util.h"

namespace tailor {
namespace {
using testing::TempDir;

/// x [1, 64] → MatMul by w_nan, w_inf, w_huge, w_ok (each [64, 64], seeded
/// uniform in [-0.1, 0.1]) → y; w_nan holds one NaN, w_inf one +Inf and one
/// −Inf, every w_huge value is ±3e38 (finite; max|W|/127 overflows f16).
std::string bad_weights_model(const TempDir& dir) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 64})};
  Rng rng(3);
  std::string prev = "x";
  for (const std::string name : {"w_nan", "w_inf", "w_huge", "w_ok"}) {
    std::vector<float> w(64 * 64);
    for (float& v : w) v = static_cast<float>(rng.uniform(-0.1, 0.1));
    if (name == "w_nan") w[100] = std::numeric_limits<float>::quiet_NaN();
    if (name == "w_inf") {
      w[5] = std::numeric_limits<float>::infinity();
      w[70] = -std::numeric_limits<float>::infinity();
    }
    if (name == "w_huge")
      for (float& v : w) v = v < 0 ? -3e38f : 3e38f;
    m.graph.add_initializer(name, Tensor::from_f32({64, 64}, w));
    testing::append_matmul(m.graph, prev, name);
  }
  m.graph.outputs = {prev};
  const std::string path = dir.file("bad_weights.onnx");
  graph::write_onnx(m, path);
  return path;
}

TEST(ProfileBadWeights, LayerIsNamedKeptDenseAndTheRunGoesOn) {
  TempDir dir;
  const std::string model = bad_weights_model(dir);
  const std::string out = dir.file("profile.json");
  const auto r = testing::run_cli("profile " + model +
                                  " --schemes dense,int8,int4,lowrank --threads 2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // MatMul stores W as [in, out]: stored element 100 is in 1, out 36, the
  // [out, in] view's row 36, column 1; stored 5 and 70 are rows 5 and 6.
  EXPECT_NE(r.output.find("tailor: warning: w_nan: kept dense: 1 non-finite weight (the first at "
                          "row 36, column 1 of the [out, in] view: nan)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tailor: warning: w_inf: kept dense: 2 non-finite weights (the first at "
                          "row 5, column 0 of the [out, in] view: inf)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tailor: warning: w_huge: kept dense: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning: w_ok"), std::string::npos) << r.output;

  const ModelProfile p = read_profile(out);
  ASSERT_EQ(p.layers.size(), 4u);
  for (const LayerProfile& l : p.layers) {
    if (l.name == "w_ok") {
      EXPECT_TRUE(l.kept_dense.empty());
      EXPECT_GE(l.candidates.size(), 3u);  // dense, int8, int4 and the low-rank ranks
      continue;
    }
    ASSERT_EQ(l.candidates.size(), 1u) << l.name;
    EXPECT_EQ(l.candidates[0].label, "dense");
    EXPECT_EQ(l.candidates[0].rel_error, 0.0);
    EXPECT_EQ(l.candidates[0].bytes, 4 * 64 * 64);
    EXPECT_EQ(l.candidates[0].macs, 64 * 64);
    EXPECT_FALSE(l.kept_dense.empty()) << l.name;
  }
  // The reason is in profile.json itself.
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(j["layers"][0]["kept_dense"],
            "1 non-finite weight (the first at row 36, column 1 of the [out, in] view: nan)");
  EXPECT_FALSE(j["layers"][3].contains("kept_dense"));
  // A plan over it works: the kept-dense layers stay dense.
  const auto plan = testing::run_cli("plan " + out + " --budget 90% -o " + dir.file("plan.json"));
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
}

}  // namespace
}  // namespace tailor
