// The cost-model trainer across graphs: recovery of known coefficients from
// synthetic measurements, a pooled fit that needs both graphs, a pooled fit
// on two small real graphs, the JSON round trip into `tailor tune
// --cost-model`, determinism with the seed.
#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/train.h"
#include "tailor/tune/tune.h"
#include "test_util.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

using nlohmann::json;

// n samples of a graph whose latency is exactly Σ_j c_j·f_j; features in
// `zero` are always 0 in this graph (the graph says nothing about them).
GraphSamples synthetic(const std::string& name, const std::vector<double>& c, int n,
                       const std::vector<size_t>& zero, uint64_t seed) {
  Rng rng(seed);
  GraphSamples g;
  g.name = name;
  for (int i = 0; i < n; ++i) {
    std::vector<double> f(c.size());
    f[0] = 1.0;
    for (size_t j = 1; j < f.size(); ++j) f[j] = rng.uniform(0, 2);
    for (size_t j : zero) f[j] = 0;
    double t = 0;
    for (size_t j = 0; j < f.size(); ++j) t += c[j] * f[j];
    g.keys.push_back(name + std::to_string(i));
    g.features.push_back(f);
    g.latency_ms.push_back(t);
  }
  return g;
}

// Known non-negative coefficients, one per cost-model term (one of them 0).
const std::vector<double> kCoefficients = {0.3, 1.5, 0.8, 0.2, 2.0, 0.0, 0.6, 1.1, 0.9, 1.3, 0.4};

TEST(TuneTrain, PooledFitRecoversKnownCoefficients) {
  ASSERT_EQ(kCoefficients.size(), feature_names().size());
  // Graph A never exercises terms 2 and 3, graph B never 6 and 7: neither
  // alone determines every coefficient, the pooled fit does (y = X·c exactly,
  // so the log loss is 0 at softplus(θ) = c and nowhere else).
  const std::vector<GraphSamples> graphs = {synthetic("a", kCoefficients, 80, {2, 3}, 1),
                                            synthetic("b", kCoefficients, 80, {6, 7}, 2)};
  TrainOptions o;
  o.iterations = 12000;
  const TrainResult r = train_cost_model(graphs, o);
  EXPECT_LT(r.loss, 1e-6);
  const auto got = r.model.coefficients();
  for (size_t j = 0; j < kCoefficients.size(); ++j) {
    EXPECT_GE(got[j], 0.0);
    EXPECT_NEAR(got[j], kCoefficients[j], 0.02) << feature_names()[j];
  }
  // 25% of 80 held out per graph; an exact model ranks them exactly.
  ASSERT_EQ(r.graphs.size(), 2u);
  for (const auto& g : r.graphs) {
    EXPECT_EQ(g.held_out, 20) << g.name;
    EXPECT_EQ(g.train, 60) << g.name;
    ASSERT_TRUE(g.spearman.has_value());
    EXPECT_GT(*g.spearman, 0.99) << g.name;
  }
  ASSERT_TRUE(r.spearman_pooled.has_value());
  EXPECT_GT(*r.spearman_pooled, 0.99);

  // Graph A alone leaves c_2, c_3 undetermined: its fit predicts graph B's
  // samples worse than the pooled fit does.
  const TrainResult alone = train_cost_model({graphs[0]}, o);
  double err_alone = 0, err_pooled = 0;
  for (size_t i = 0; i < graphs[1].features.size(); ++i) {
    const double y = graphs[1].latency_ms[i];
    err_alone += std::pow(std::log(alone.model.predict(graphs[1].features[i]) / y), 2);
    err_pooled += std::pow(std::log(r.model.predict(graphs[1].features[i]) / y), 2);
  }
  EXPECT_GT(err_alone, 100 * err_pooled);
}

TEST(TuneTrain, DeterministicWithTheSeedAndJsonRoundTrip) {
  const std::vector<GraphSamples> graphs = {synthetic("a", kCoefficients, 24, {}, 3),
                                            synthetic("b", kCoefficients, 16, {}, 4)};
  TrainOptions o;
  o.iterations = 500;
  const TrainResult r1 = train_cost_model(graphs, o), r2 = train_cost_model(graphs, o);
  EXPECT_EQ(r1.model.theta(), r2.model.theta());
  EXPECT_EQ(r1.graphs[0].spearman, r2.graphs[0].spearman);
  EXPECT_EQ(train_result_json(r1).dump(), train_result_json(r2).dump());
  // Another seed splits differently: the held-out ρ changes, the final fit on
  // every sample does not depend on the split.
  o.seed = 99;
  const TrainResult r3 = train_cost_model(graphs, o);
  EXPECT_EQ(r3.model.theta(), r1.model.theta());

  // The saved JSON is what tune --cost-model reads: θ exactly, term names checked.
  const json j = json::parse(train_result_json(r1).dump());
  EXPECT_EQ(CostModel::from_json(j, feature_names()).theta(), r1.model.theta());
  EXPECT_EQ(j.at("trained_on").size(), 2u);
  EXPECT_EQ(j.at("trained_on")[0].at("name"), "a");
  EXPECT_EQ(j.at("trained_on")[1].at("held_out"), 4);  // ceil(0.25·16)
  json bad = j;
  bad["terms"][0] = "something_else";
  testing::expect_error_naming([&] { CostModel::from_json(bad, feature_names()); }, "cost model",
                               "terms");
  // No samples, or a sample of the wrong length: one-line errors.
  testing::expect_error_naming(
      [&] {
        train_cost_model({GraphSamples{"e", {}, {}, {}}}, o);
      },
      "train", "no measured samples");
  GraphSamples short_f = graphs[0];
  short_f.features[3].pop_back();
  testing::expect_error_naming([&] { train_cost_model({short_f}, o); }, "train", "terms");
}

TEST(TuneTrain, AnchoredFitStaysNearTheWarmStart) {
  // One measurement cannot determine 8 coefficients: unanchored, the fit
  // moves every coefficient; anchored, it stays near the start (the prior)
  // and still reduces the log error of that one measurement.
  const GraphSamples g = synthetic("a", kCoefficients, 1, {}, 5);
  CostModel start(kCoefficients.size(), 0.5);
  CostModel free = start, anchored = start;
  free.fit(g.features, g.latency_ms, 300, 0.05);
  anchored.fit(g.features, g.latency_ms, 300, 0.05, 1.0, &start.theta());
  double moved_free = 0, moved_anchored = 0;
  for (size_t j = 0; j < start.size(); ++j) {
    moved_free += std::fabs(free.theta()[j] - start.theta()[j]);
    moved_anchored += std::fabs(anchored.theta()[j] - start.theta()[j]);
  }
  EXPECT_LT(moved_anchored, moved_free);
  const double y = g.latency_ms[0];
  EXPECT_LT(std::fabs(std::log(anchored.predict(g.features[0]) / y)),
            std::fabs(std::log(start.predict(g.features[0]) / y)));
}

TEST(TuneTrain, PooledFitOnTwoSmallGraphs) {
  HarnessOptions h;
  h.repeats = 1;
  h.statistic = "min";
  h.flush_bytes = 1 << 16;
  // The dense convs' W8A8 variant rounds activations to int8: a tolerance
  // that admits it, so every sampled configuration is timed.
  h.tolerance = 0.5;
  const graph::Model a = testing::showcase_model(), b = testing::conv_relu_model();
  GraphBench ba(a, "showcase", {}, 0, 1, h), bb(b, "conv_relu", {}, 0, 1, h);
  sample_configurations(ba, 6, 0);
  sample_configurations(bb, 6, 0);
  EXPECT_EQ(ba.measured().size(), 6u);
  EXPECT_EQ(bb.measured().size(), 6u);
  const GraphSamples sa = ba.samples(), sb = bb.samples();
  // Every candidate passes the check on these graphs; the default comes first.
  EXPECT_EQ(sa.latency_ms.size(), 6u);
  EXPECT_EQ(sb.latency_ms.size(), 6u);
  EXPECT_EQ(sa.keys[0], DecisionSpace::key(ba.space().default_configuration()));
  // The samples' terms are those of the configured graphs: the kernel term
  // is nodes/100 of the default pipeline's graph (run here directly).
  const graph::Model all =
      graph::run_passes(a, graph::parse_pass_list("all"), runtime::default_pass_options());
  EXPECT_NEAR(sa.features[0][4], static_cast<double>(all.graph.nodes.size()) / 100.0, 1e-12);

  TrainOptions o;
  o.iterations = 1000;
  const TrainResult r = train_cost_model({sa, sb}, o);
  ASSERT_EQ(r.graphs.size(), 2u);
  EXPECT_EQ(r.graphs[0].held_out, 3);  // ceil(0.25·6) = 2, raised to 3
  EXPECT_EQ(r.graphs[1].train, 3);
  for (double c : r.model.coefficients()) EXPECT_GE(c, 0.0);
  // The pooled model predicts the larger graph slower than the smaller one
  // at their defaults (the showcase's convs are ~100× conv_relu's FLOPs).
  EXPECT_GT(r.model.predict(sa.features[0]), r.model.predict(sb.features[0]));
  EXPECT_TRUE(std::isfinite(r.loss));

  // Same seed: the same configurations in the same order (times differ).
  GraphBench again(b, "conv_relu", {}, 0, 1, h);
  sample_configurations(again, 6, 0);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(again.measured()[i].key, bb.measured()[i].key) << i;
  GraphBench other(b, "conv_relu", {}, 0, 1, h);
  sample_configurations(other, 6, 1);
  bool differs = false;
  for (size_t i = 0; i < 6; ++i)
    differs = differs || other.measured()[i].key != bb.measured()[i].key;
  EXPECT_TRUE(differs);
}

TEST(TuneTrain, CliTrainsAndTuneWarmStartsFromIt) {
  testing::TempDir dir;
  // The CLI's plumbing on the smallest graph (written twice under two names;
  // the pooled fit over two different graphs is tested above in process).
  const std::string a = dir.file("conv_relu_a.onnx"), b = dir.file("conv_relu_b.onnx");
  graph::write_onnx(testing::conv_relu_model(), a);
  graph::write_onnx(testing::conv_relu_model(), b);
  const std::string out = dir.file("cm");
  auto r = testing::run_cli("tune-train " + a + " " + b +
                            " --measurements 4 --repeats 1 --threads 1 --evaluate " + b +
                            " --k 0,2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pooled"), std::string::npos) << r.output;
  const json cm = json::parse(read_file(out + "/cost_model.json"));
  EXPECT_EQ(cm.at("trained_on").size(), 2u);
  const json ws = json::parse(read_file(out + "/warm_start.json"));
  ASSERT_EQ(ws.at("models")[0].at("curve").size(), 2u);
  EXPECT_EQ(ws.at("models")[0].at("curve")[1].at("k"), 2);
  EXPECT_GT(ws.at("models")[0].at("curve")[1].at("trained").at("best_ms").get<double>(), 0.0);
  // k = 0 measures nothing: no best latency (it was written and printed as 0).
  EXPECT_TRUE(ws.at("models")[0].at("curve")[0].at("trained").at("best_ms").is_null());
  EXPECT_EQ(r.output.find(" 0.000 ms"), std::string::npos) << r.output;

  // tune --cost-model starts its gradient method from the trained θ.
  r = testing::run_cli("tune " + b +
                       " --measurements 2 --repeats 1 --paired-rounds 1 --threads 1 " +
                       "--cost-model " + out + "/cost_model.json -o " + dir.file("tuned"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const TuneRecord record = read_record(dir.file("tuned") + "/decisions.json");
  EXPECT_EQ(record.cost_model.initial.theta(), cm.at("theta").get<std::vector<double>>());

  // Bad arguments: one-line errors, exit code 2.
  r = testing::run_cli("tune-train " + a + " --input-shape x=1x0 -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--input-shape"), std::string::npos) << r.output;
  r = testing::run_cli("tune-train " + dir.file("missing.onnx") + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
}  // namespace tailor::tune
