// Verification and non-finite values: --calib inputs holding NaN or ±Inf are
// refused naming the file, and an output holding them fails verification
// naming the output (both models' NaN used to compare as "rel 0, cos 1").
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "tailor/compress/compress.h"
#include "tailor/core/rng.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

/// y = Log(MatMul(x, w)), x f32 [1, 64], w [64, 64] seeded uniform in
/// [-0.1, 0.1] (one layer of 4096 weights to plan): about half of y is NaN
/// (the log of a negative product) for any nonzero x.
std::string log_model(const TempDir& dir) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 64})};
  std::vector<float> w(64 * 64);
  Rng rng(5);
  for (float& v : w) v = static_cast<float>(rng.uniform(-0.1, 0.1));
  m.graph.add_initializer("w", Tensor::from_f32({64, 64}, w));
  graph::Node mm;
  mm.op_type = "MatMul";
  mm.name = "mm";
  mm.inputs = {"x", "w"};
  mm.outputs = {"h"};
  graph::Node log;
  log.op_type = "Log";
  log.name = "log";
  log.inputs = {"h"};
  log.outputs = {"y"};
  m.graph.nodes = {mm, log};
  m.graph.outputs = {"y"};
  m.graph.types["y"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 64})};
  const std::string path = dir.file("log.onnx");
  graph::write_onnx(m, path);
  return path;
}

compress::CompressOptions options(const TempDir& dir, const std::string& model) {
  compress::CompressOptions o;
  o.model = model;
  o.budget = "100%";
  o.schemes = {"dense", "int8"};
  o.out_dir = dir.file("out");
  o.cache = false;
  o.random_inputs = 2;
  o.threads = 1;
  o.task = "none";
  return o;
}

Tensor ramp(float nan_or_inf_at_7) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.05f * static_cast<float>(i) - 1.0f;
  x[7] = nan_or_inf_at_7;
  return Tensor::from_f32({1, 64}, x);
}

TEST(VerifyNonFinite, CalibrationInputsWithNanOrInfAreRefusedNamingTheFile) {
  TempDir dir;
  compress::CompressOptions o = options(dir, log_model(dir));
  fs::create_directories(dir.file("calib"));
  o.calib_dir = dir.file("calib");
  write_npy(dir.file("calib/a.npy"), ramp(0.5f));
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    write_npy(dir.file("calib/b.npy"), ramp(bad));
    testing::expect_error_naming([&] { compress::compress_model(o); }, dir.file("calib/b.npy"),
                                 "input 'x' holds 1 non-finite value (element 7 is ");
    EXPECT_FALSE(fs::exists(o.out_dir));
  }
}

TEST(VerifyNonFinite, NonFiniteOutputsFailVerificationNamingTheOutput) {
  TempDir dir;
  compress::CompressOptions o = options(dir, log_model(dir));
  fs::create_directories(dir.file("calib"));
  o.calib_dir = dir.file("calib");
  write_npy(dir.file("calib/a.npy"), ramp(0.5f));
  // Refused where the output damage is measured, before any plan is made
  // on NaN damages (the exact solver's sort crashed on them).
  testing::expect_error_naming([&] { compress::compress_model(o); }, "y",
                               "the original model's output holds");
  testing::expect_error_naming([&] { compress::compress_model(o); }, "y",
                               "on " + dir.file("calib/a.npy"));
  EXPECT_FALSE(fs::exists(o.out_dir));
  // Random inputs too: the input is named.
  o.calib_dir.clear();
  testing::expect_error_naming([&] { compress::compress_model(o); }, "y", "on random-0");
}

}  // namespace
}  // namespace tailor
