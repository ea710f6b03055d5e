// load_model gives a graph::Model for every format; weights-only models have
// no nodes; load_runnable_model and `tailor run` refuse them in one line; the
// llama checkpoint test; read_onnx decodes each tensor once, viewing the proto.
#include "tailor/io/load_model.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/io/onnx.h"
#include "tailor/io/safetensors.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;

std::string small_safetensors(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  write_safetensors(path,
                    {{"b.weight", Tensor::from_f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6})},
                     {"a.bias", Tensor::from_f32({3}, std::vector<float>{7, 8, 9})}},
                    {{"format", "pt"}});
  return path;
}

TEST(LoadModel, WeightsOnlyFormatsGiveAModelWithoutNodes) {
  TempDir dir;
  const graph::Model m = load_model(small_safetensors(dir, "m.safetensors"));
  EXPECT_EQ(m.format, "safetensors");
  EXPECT_EQ(m.source, dir.file("m.safetensors"));
  EXPECT_EQ(m.metadata.at("format"), "pt");
  EXPECT_EQ(m.weight_convention, graph::WeightConvention::pytorch);
  EXPECT_TRUE(m.graph.nodes.empty());
  EXPECT_EQ(m.graph.initializer_order, (std::vector<std::string>{"b.weight", "a.bias"}));
  EXPECT_EQ(m.graph.initializers.at("a.bias").to_f32_vector(), (std::vector<float>{7, 8, 9}));
  const graph::Model l = load_model(testing::fixture_path("stories260K.bin"));
  EXPECT_EQ(l.format, "llama2c");
  EXPECT_EQ(l.weight_convention, graph::WeightConvention::out_in);
  EXPECT_TRUE(l.graph.nodes.empty());
  EXPECT_EQ(l.graph.initializer_order.front(), "model.embed_tokens.weight");
}

TEST(LoadModel, NothingToRunIsAOneLineError) {
  TempDir dir;
  const std::string path = small_safetensors(dir, "w.safetensors");
  testing::expect_error_naming([&] { load_runnable_model(path); }, path, "has no graph to run");
  const testing::CommandResult r = testing::run_cli("run '" + path + "'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("has no graph to run"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
}

TEST(LoadModel, LlamaCheckpointsAreRecognised) {
  EXPECT_TRUE(is_llama_checkpoint(load_model(testing::fixture_path("stories260K.bin"))));
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "hf");
  small_safetensors(dir, "hf/model.safetensors");
  EXPECT_FALSE(is_llama_checkpoint(load_model(dir.file("hf"))));  // no config.json
  testing::write_bytes(dir.file("hf/config.json"), R"({"architectures": ["GPT2LMHeadModel"]})");
  EXPECT_FALSE(is_llama_checkpoint(load_model(dir.file("hf"))));
  testing::write_bytes(dir.file("hf/config.json"), R"({"architectures": ["LlamaForCausalLM"]})");
  EXPECT_TRUE(is_llama_checkpoint(load_model(dir.file("hf"))));
  // model_type alone, as generate / kld / compress accept it.
  testing::write_bytes(dir.file("hf/config.json"), R"({"model_type": "llama"})");
  EXPECT_TRUE(is_llama_checkpoint(load_model(dir.file("hf"))));
  // Not JSON: taken as a llama's, so the llama reader names the problem.
  testing::write_bytes(dir.file("hf/config.json"), "{not json");
  EXPECT_TRUE(is_llama_checkpoint(load_model(dir.file("hf"))));
  const testing::CommandResult r =
      testing::run_cli("run '" + dir.file("hf") + "' --input input_ids=none.npy");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("config.json"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("weights-only"), std::string::npos) << r.output;
  graph::Model gguf;
  gguf.format = "gguf";
  EXPECT_FALSE(is_llama_checkpoint(gguf));
  gguf.metadata["general.architecture"] = "llama";
  EXPECT_TRUE(is_llama_checkpoint(gguf));
}

/// One MatMul whose B (an initializer, [64, 32] f32 raw_data) is `w`, in
/// `domain` at `opset`.
std::string matmul_model(const TempDir& dir, const std::string& domain, int64_t opset) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(opset);
  auto* g = mp.mutable_graph();
  auto* t = g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(64);
  t->add_dims(32);
  std::vector<float> v(64 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  auto* n = g->add_node();
  n->set_op_type("MatMul");
  n->set_domain(domain);
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  const std::string path = dir.file("mm.onnx");
  testing::write_bytes(path, mp.SerializeAsString());
  return path;
}

TEST(LoadModel, ReadOnnxTakesRawDataFromTheProtoWithoutACopy) {
  TempDir dir;
  const graph::Model m = read_onnx(matmul_model(dir, "", 13));
  ASSERT_NE(m.proto, nullptr);
  const Tensor& w = m.graph.initializers.at("w");
  EXPECT_EQ(w.shape(), (Shape{64, 32}));
  EXPECT_EQ(w.to_f32_vector()[7], 3.5f);  // 7 · 0.5
  EXPECT_EQ(w.to_f32_vector()[2047], 1023.5f);
  // The bytes moved into the tensor: the proto holds them no more.
  EXPECT_TRUE(m.proto->graph().initializer(0).raw_data().empty());
  EXPECT_FALSE(w.is_mapped());  // owned (never madvised away by the profiler)
  EXPECT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.metadata.at("opset"), "13");
}

TEST(LoadModel, ReadOnnxIsPermissiveImportChecksWhatTheRuntimeRuns) {
  TempDir dir;
  const std::string ms = matmul_model(dir, "com.microsoft", 13);
  const graph::Model m = read_onnx(ms);  // read (e.g. to profile) whatever the domain
  EXPECT_EQ(m.graph.nodes.at(0).domain, "com.microsoft");
  testing::expect_error_naming([&] { graph::import_onnx(ms); }, ms, "com.microsoft");
  testing::expect_error_naming([&] { load_runnable_model(ms); }, ms, "com.microsoft");
  const std::string new_opset = matmul_model(dir, "", 21);
  EXPECT_EQ(read_onnx(new_opset).opset, 21);
  testing::expect_error_naming([&] { graph::import_onnx(new_opset); }, new_opset, "opset 21");
  EXPECT_EQ(load_runnable_model(matmul_model(dir, "ai.onnx", 17)).graph.nodes.at(0).domain, "");
}

}  // namespace
}  // namespace tailor
