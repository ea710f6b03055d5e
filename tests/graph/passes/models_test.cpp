// Every pass alone and all together on the fetched models: the optimized
// graph verifies and its outputs equal the original's within 1e-5 relative
// (to each output's largest magnitude) on seeded random inputs.
#include <filesystem>

#include "pass_test_util.h"
#include "tailor/graph/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

struct ModelCase {
  const char* file;
  std::map<std::string, Tensor> (*feeds)();
};

std::map<std::string, Tensor> rec_feeds() {
  return {{"x", random_f32({1, 3, 48, 160}, 11)}};
}
std::map<std::string, Tensor> det_feeds() {
  return {{"x", random_f32({1, 3, 64, 96}, 12)}};
}
std::map<std::string, Tensor> cls_feeds() {
  return {{"x", random_f32({1, 3, 48, 192}, 13)}};
}
std::map<std::string, Tensor> vad_feeds() {
  Tensor sr = Tensor::zeros(DType::i64, {});
  *reinterpret_cast<int64_t*>(sr.mutable_raw()) = 16000;
  return {{"input", random_f32({1, 512}, 14, -0.5f, 0.5f)},
          {"state", random_f32({2, 1, 128}, 15, -0.1f, 0.1f)},
          {"sr", sr}};
}

void check_model(const ModelCase& mc) {
  const std::string path = model_path(mc.file);
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " not fetched (scripts/fetch-models.sh)";
  const graph::Model m = graph::import_onnx(path);
  const auto feeds = mc.feeds();
  const auto want = run_model(m, feeds);
  const graph::PassOptions opts = runtime::default_pass_options();
  std::vector<std::vector<std::string>> configs;
  for (const auto& p : graph::registered_passes()) configs.push_back({p.name});
  std::vector<std::string> every;
  for (const auto& p : graph::registered_passes()) every.push_back(p.name);
  configs.push_back(every);
  configs.push_back(graph::parse_pass_list("all"));
  for (const auto& names : configs) {
    std::string what = mc.file;
    for (const auto& n : names) what += " " + n;
    graph::Model opt;
    ASSERT_NO_THROW(opt = graph::run_passes(m, names, opts)) << what;
    ASSERT_NO_THROW(graph::verify(opt)) << what;
    expect_same_outputs(want, run_model(opt, feeds), 1e-5, what);
  }
}

TEST(PassesOnModels, Recognizer) {
  check_model({"ch_PP-OCRv4_rec_infer.onnx", rec_feeds});
}
TEST(PassesOnModels, Detector) {
  check_model({"ch_PP-OCRv4_det_infer.onnx", det_feeds});
}
TEST(PassesOnModels, Classifier) {
  check_model({"ch_ppocr_mobile_v2.0_cls_infer.onnx", cls_feeds});
}
TEST(PassesOnModels, SileroVad) {
  check_model({"silero_vad_v5.onnx", vad_feeds});
}

}  // namespace
}  // namespace tailor::testing
