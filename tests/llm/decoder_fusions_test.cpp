// fuse_group_query_attention (src/llm/decoder_fusions.h) on stories260K: the
// fused graph against the graph with only the Attention fusion, both run by
// the executor without other passes (the unfused path: Reshape, MatMul, Mul,
// Add, Transpose, Concat nodes), step by step from empty pasts with odd step
// lengths (pasts of 0 and more positions). The fused kernel rounds RoPE's
// t·cos + (t·R)·sin as two products and a sum; the unfused Mul, Mul, Add run
// by the executor's kernels as they please (FMA), so keys may differ in the
// last bit and later layers inherit it: logits and presents agree within
// 2e-6 of their largest value (measured: ≤ 3.9e-7 on the presents, ≤ 5.8e-7
// on the logits); layer 0's values, upstream of any RoPE, exactly.
// Against the standard graph (MatMul, Softmax) within 1e-5. fuse_skip_rms_norm
// against the graph before it: equal. The fused node reading the RoPE tables
// at its past length and building the causal mask itself against one given
// them as inputs: equal.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "llm/decoder_fusions.h"
#include "llm/stories.h"
#include "tailor/graph/passes.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"

namespace tailor::llm {
namespace {

using testing::ids_tensor;
using testing::kStoriesTokens;
using testing::rel_diff;

/// Runs `m` by the executor over kStoriesTokens in steps of `steps` tokens,
/// feeding each step's presents as the next pasts; every output of every step.
std::vector<std::map<std::string, Tensor>> run_steps(const graph::Model& m,
                                                     const std::vector<size_t>& steps) {
  runtime::Executor ex(m);
  std::map<std::string, Tensor> feeds = empty_pasts(m);
  std::vector<std::map<std::string, Tensor>> outs;
  size_t at = 0;
  for (size_t n : steps) {
    feeds["input_ids"] = ids_tensor(
        std::vector<int32_t>(kStoriesTokens.begin() + at, kStoriesTokens.begin() + at + n));
    at += n;
    outs.push_back(ex.run(feeds));
    for (const auto& [name, t] : outs.back())
      if (name.rfind("present.", 0) == 0) feeds["past_key_values." + name.substr(8)] = t;
  }
  return outs;
}

TEST(DecoderFusions, GroupQueryAttentionFusesEachLayersBlock) {
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  const size_t before = m.graph.nodes.size();
  EXPECT_EQ(fuse_group_query_attention(m), 5);
  // Per layer 21 nodes → 1: Reshape q, k, v; RoPE (MatMul, Mul, Mul, Add) of
  // q and k; Transpose q, k, v; Reshape to groups; Concat k, v; Attention;
  // Reshape, Transpose, Reshape back.
  EXPECT_EQ(m.graph.nodes.size(), before - 5 * (21 - 1));
  EXPECT_EQ(fuse_group_query_attention(m), 0);
  size_t gqa = 0;
  for (const graph::Node& n : m.graph.nodes)
    if (n.op_type == "GroupQueryAttention") {
      ++gqa;
      // The RoPE tables whole and the mask built in the kernel: 8 inputs.
      EXPECT_EQ(n.attr_int("rope_tables", 0), 1);
      EXPECT_EQ(n.attr_int("causal", 0), 1);
      EXPECT_EQ(n.inputs.size(), 8u);
      EXPECT_EQ(n.inputs[5], "llama.rope.cos");
      EXPECT_EQ(n.inputs[6], "llama.rope.sin");
    }
  EXPECT_EQ(gqa, 5u);
  // The position nodes (Shape, Slice, Add of lengths, Squeeze, Range,
  // Unsqueeze, Greater, Where, Tile) are read by nothing now: dce drops them.
  const graph::Model pruned = graph::run_passes(m, {"dce"}, runtime::default_pass_options());
  for (const graph::Node& n : pruned.graph.nodes)
    for (const char* op : {"Shape", "Slice", "Range", "Greater", "Where", "Tile", "Squeeze"})
      EXPECT_NE(n.op_type, op) << n.name;
}

TEST(DecoderFusions, GroupQueryAttentionBuildsTheMaskAndRopeRowsAsTheGraphDid) {
  // A mask of −1e9 instead of −inf is not the builder's causal mask: the
  // fused node keeps the sliced tables and the mask as inputs. exp(−1e9 − m)
  // is 0 in f32 as exp(−inf) is, so both fused forms agree bit for bit,
  // pasts of 0 and more positions.
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  graph::Model explicit_inputs = m;
  const std::vector<float> nearly_inf = {-1e9f};
  size_t wheres = 0;
  for (const graph::Node& n : explicit_inputs.graph.nodes)
    if (n.op_type == "Where") {
      explicit_inputs.graph.initializers[n.inputs[1]] = Tensor::from_f32({}, nearly_inf);
      ++wheres;
    }
  ASSERT_EQ(wheres, 1u);  // the mask, shared by the layers
  ASSERT_EQ(fuse_group_query_attention(m), 5);
  ASSERT_EQ(fuse_group_query_attention(explicit_inputs), 5);
  for (const graph::Node& n : explicit_inputs.graph.nodes)
    if (n.op_type == "GroupQueryAttention") {
      EXPECT_EQ(n.attr_int("causal", 0), 0);
      EXPECT_EQ(n.inputs.size(), 9u);
    }
  const std::vector<size_t> steps = {3, 1, 4, 1, 1, 2};
  const auto want = run_steps(explicit_inputs, steps);
  const auto got = run_steps(m, steps);
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < steps.size(); ++s)
    for (const auto& [name, t] : want[s])
      EXPECT_EQ(got[s].at(name).to_f32_vector(), t.to_f32_vector()) << name << " step " << s;
}

TEST(DecoderFusions, GroupQueryAttentionEqualsTheUnfusedSteps) {
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  const graph::Model attention_only = m;
  ASSERT_EQ(fuse_group_query_attention(m), 5);
  // Past lengths 0, 5, 8, 9, 10 with steps of 5, 3, 1, 1 and 4 tokens.
  const std::vector<size_t> steps = {5, 3, 1, 1, 4};
  const auto want = run_steps(attention_only, steps);
  const auto got = run_steps(m, steps);
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size());
    for (const auto& [name, t] : want[s]) {
      const Tensor& g = got[s].at(name);
      EXPECT_EQ(g.shape(), t.shape()) << name << " step " << s;
      if (name == "present.0.value") {  // upstream of any RoPE: exact
        EXPECT_EQ(g.to_f32_vector(), t.to_f32_vector()) << name << " step " << s;
      } else {
        const double d = rel_diff(t.to_f32_vector(), g.to_f32_vector());
        EXPECT_LE(d, 2e-6) << name << " step " << s;
        std::printf("%s step %zu: max rel diff %.3g\n", name.c_str(), s, d);
      }
    }
  }
  // And the standard graph (no fusion): the same logits within rounding.
  const auto standard = run_steps(load_llama_graph(testing::stories_path()), steps);
  for (size_t s = 0; s < steps.size(); ++s)
    EXPECT_LE(
        rel_diff(standard[s].at("logits").to_f32_vector(), got[s].at("logits").to_f32_vector()),
        1e-5)
        << "step " << s;
}

TEST(DecoderFusions, SkipRmsNormAbsorbsEachResidualAddExactly) {
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  ASSERT_EQ(fuse_group_query_attention(m), 5);
  ASSERT_EQ(fuse_rms_norm(m), 11);  // two per layer and the final one
  const graph::Model unfused = m;
  const size_t before = m.graph.nodes.size();
  // Every norm but layer 0's first (it reads the embedding Gather) follows a
  // residual Add.
  ASSERT_EQ(fuse_skip_rms_norm(m), 10);
  EXPECT_EQ(m.graph.nodes.size(), before - 10);
  EXPECT_EQ(fuse_skip_rms_norm(m), 0);
  // The sum is the same f32 addition and the norm the same kernel: every
  // output of every step equal, pasts of 0 and more positions.
  const std::vector<size_t> steps = {4, 1, 2, 1};
  const auto want = run_steps(unfused, steps);
  const auto got = run_steps(m, steps);
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < steps.size(); ++s)
    for (const auto& [name, t] : want[s])
      EXPECT_EQ(got[s].at(name).to_f32_vector(), t.to_f32_vector()) << name << " step " << s;
}

TEST(DecoderFusions, SkipRmsNormNeedsAddendsOfOneShape) {
  // A broadcast Add (a [n] bias on [1, S, n]) is left alone.
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  ASSERT_EQ(fuse_group_query_attention(m), 5);
  ASSERT_EQ(fuse_rms_norm(m), 11);
  size_t norm = 0;
  while (m.graph.nodes[norm].op_type != "RMSNormalization") ++norm;
  const std::string x = m.graph.nodes[norm].inputs[0];
  const std::string gain = m.graph.nodes[norm].inputs[1];
  graph::Node add;
  add.op_type = "Add";
  add.inputs = {x, gain};
  add.outputs = {"biased"};
  m.graph.nodes.insert(m.graph.nodes.begin() + static_cast<std::ptrdiff_t>(norm), add);
  m.graph.nodes[norm + 1].inputs[0] = "biased";
  EXPECT_EQ(fuse_skip_rms_norm(m), 10);  // the other norms, as without it
  size_t left = 0;
  for (const graph::Node& n : m.graph.nodes)
    if (n.op_type == "RMSNormalization" && n.inputs[0] == "biased") {
      EXPECT_EQ(n.inputs.size(), 2u);
      ++left;
    }
  EXPECT_EQ(left, 1u);
}

TEST(DecoderFusions, GroupQueryAttentionLeavesOtherGraphsAlone) {
  // A present read by another node (here: made an extra output of a second
  // reader) is not fused; nor is a graph without the Attention fusion.
  graph::Model plain = load_llama_graph(testing::stories_path());
  EXPECT_EQ(fuse_group_query_attention(plain), 0);
  graph::Model m = load_llama_graph(testing::stories_path());
  ASSERT_EQ(fuse_attention(m), 5);
  graph::Node reader;
  reader.op_type = "Identity";
  reader.inputs = {"present.0.key"};
  reader.outputs = {"present_0_key_copy"};
  m.graph.nodes.push_back(reader);
  m.graph.outputs.push_back("present_0_key_copy");
  EXPECT_EQ(fuse_group_query_attention(m), 4);
}

}  // namespace
}  // namespace tailor::llm
