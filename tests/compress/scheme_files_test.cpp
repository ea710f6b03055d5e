// Every scheme family forced on the PP-OCRv4 recogniser: the written
// model.onnx holds the plan's bytes (at most 1.1 × the planned layers' bytes
// plus the unplanned weights and the original graph's own overhead), runs in
// onnxruntime with tailor's outputs (max |Δ| ≤ 1e-4 · max |ort|), and tailor
// runs it with the forms recognised as compressed ops.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "ort/ort_runner.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {

const char* kRecogniser = "ch_PP-OCRv4_rec_infer.onnx";

/// One family forced on every weight of ≥ 4096 elements it applies to (the
/// profiler's default min_params); `label` "lowrank" takes the smallest default rank.
plan::Plan forced_plan(const graph::Model& m, const std::string& label, int64_t& planned_bytes,
                       int64_t& other_bytes) {
  plan::Plan p;
  planned_bytes = other_bytes = 0;
  for (const graph::WeightView& w : graph::weights(m)) {
    const auto nbytes = static_cast<int64_t>(w.tensor.nbytes());
    if (w.layout == WeightLayout::none || w.tensor.numel() < 4096) {
      other_bytes += nbytes;
      continue;
    }
    const Shape s = w.layout == WeightLayout::conv ? w.tensor.shape() : w.out_in_shape();
    std::string l = label;
    if (label == "lowrank") {
      const auto ranks = schemes::default_ranks(w.out_in_shape());
      if (ranks.empty()) {
        other_bytes += nbytes;
        continue;
      }
      l = "lowrank-r" + std::to_string(ranks.front());
    }
    const schemes::Scheme scheme = schemes::parse_scheme(l);
    if (!scheme.applicable(s)) {
      other_bytes += nbytes;
      continue;
    }
    const auto b = static_cast<int64_t>(scheme.predicted_bytes(s));
    planned_bytes += b;
    p.choices.push_back({w.name, l, 0, b});
  }
  return p;
}

Tensor input(uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(3 * 48 * 160);
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return Tensor::from_f32({1, 3, 48, 160}, v);
}

double max_rel(const Tensor& ours, const Tensor& ref) {
  const auto a = ours.to_f32_vector(), b = ref.to_f32_vector();
  double d = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return d / scale;
}

void check_families(const std::vector<std::string>& families) {
  const std::string path = testing::model_path(kRecogniser);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not fetched";
  const std::string no_ort = testing::ort_unavailable();
  const graph::Model model = graph::import_onnx(path);
  testing::TempDir dir;
  // The graph's own overhead: the original written by the same writer, less its weights.
  graph::write_onnx(model, dir.file("original.onnx"));
  int64_t weights = 0;
  for (const auto& [n, t] : model.graph.initializers) weights += static_cast<int64_t>(t.nbytes());
  const auto overhead =
      static_cast<int64_t>(std::filesystem::file_size(dir.file("original.onnx"))) - weights;
  const Tensor x = input(11);
  for (const std::string& family : families) {
    int64_t planned = 0, other = 0;
    const plan::Plan p = forced_plan(model, family, planned, other);
    ASSERT_FALSE(p.choices.empty()) << family;
    const auto layers = compress::encode_plan(model, p, {}, 0x7a11, 2);
    std::vector<compress::LayerRewrite> log;
    const graph::Model standard = compress::rewrite_standard(model, layers, &log);
    for (const auto& rw : log) EXPECT_NE(rw.form, "dense decoded") << family << " " << rw.layer;
    const std::string file = dir.file(family + ".onnx");
    graph::write_onnx(standard, file);
    const auto file_bytes = static_cast<int64_t>(std::filesystem::file_size(file));
    const double bound = 1.1 * static_cast<double>(planned) + static_cast<double>(other + overhead);
    EXPECT_LE(static_cast<double>(file_bytes), bound) << family;

    // tailor runs the file with its forms recognised (the passes of `tailor run`).
    const graph::Model ours = graph::run_passes(
        graph::import_onnx(file), graph::parse_pass_list("all"), runtime::default_pass_options());
    int compressed = 0;
    for (const auto& n : ours.graph.nodes) compressed += n.op_type.rfind("Compressed", 0) == 0;
    runtime::Executor ex(ours);
    const auto out = ex.run({{"x", x}});
    const Tensor& y = out.begin()->second;
    double rel = std::nan("");
    if (no_ort.empty()) {
      const auto ort = testing::run_ort(file, {{"x", x}});
      rel = max_rel(y, ort.begin()->second);
      EXPECT_LE(rel, 1e-4) << family;
    }
    std::cout << fmt::format(
        "[ recogniser ] {:<10} layers {:3}  plan {:9} B (+{} unplanned)  file {:9} B  "
        "ratio {:.3f}  compressed ops {:3}  ort max rel {:.2e}\n",
        family, p.choices.size(), planned + other, other, file_bytes,
        double(file_bytes) / double(planned + other), compressed, rel);
  }
  if (!no_ort.empty()) std::cout << no_ort << "\n";
}

TEST(SchemeFiles, RecogniserQuantized) {
  check_families({"int8", "int4", "int4-g32", "int3", "ternary"});
}

TEST(SchemeFiles, RecogniserStructured) {
  check_families({"sparse-2:4", "lowrank", "monarch", "tt", "tucker"});
}

}  // namespace
}  // namespace tailor
