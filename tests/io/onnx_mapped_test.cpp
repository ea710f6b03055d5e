// read_onnx_mapped (the wire-format scan behind `tailor profile`): the same
// weights and the same profile as the parsed path, large payloads viewed in
// the mapped file, and one-line errors naming the file for malformed input.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "io/analysed.h"
#include "tailor/core/error.h"
#include "tailor/io/onnx.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profiler.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;
using TP = onnx::TensorProto;

/// A model with a [64, 32] f32 raw_data MatMul weight (8 KB, mapped), a
/// [48, 32] packed float_data Gemm weight (6 KB, mapped), a Constant [40, 30]
/// raw tensor (4.8 KB, mapped) and a small [4, 4] raw bias (inline).
onnx::ModelProto sample_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("main");
  const auto values = [](size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 37) % 101) - 1.5f;
    return v;
  };
  const auto raw = [](TP* t, const std::string& name, std::vector<int64_t> dims,
                      const std::vector<float>& v) {
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  };
  raw(g->add_initializer(), "mm", {64, 32}, values(64 * 32, 0.03f));
  TP* gemm = g->add_initializer();
  gemm->set_name("gemm");
  gemm->set_data_type(TP::FLOAT);
  gemm->add_dims(48);
  gemm->add_dims(32);
  for (float x : values(48 * 32, 0.07f)) gemm->add_float_data(x);
  raw(g->add_initializer(), "bias", {4, 4}, values(16, 1.0f));
  onnx::NodeProto* c = g->add_node();
  c->set_op_type("Constant");
  c->add_output("const");
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  raw(a->mutable_t(), "", {40, 30}, values(40 * 30, 0.11f));
  for (const char* op : {"MatMul", "Gemm"}) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->add_input("x");
    n->add_input(op == std::string("MatMul") ? "mm" : "gemm");
    n->add_output(std::string(op) + "_y");
  }
  return m;
}

std::string save(const TempDir& dir, const std::string& bytes, const std::string& name) {
  const std::string path = dir.file(name);
  testing::write_bytes(path, bytes);
  return path;
}

/// Everything of a profile but the timings (encode_seconds), as text.
std::string without_timings(const ModelProfile& p) {
  std::string out =
      p.model + " " + std::to_string(p.dense_bytes) + " " + std::to_string(p.fixed_bytes) + "\n";
  char buf[64];
  for (const LayerProfile& l : p.layers) {
    out += l.name + " " + std::to_string(l.numel) + "\n";
    for (const Candidate& c : l.candidates) {
      std::snprintf(buf, sizeof buf, "%a", c.rel_error);  // every bit of the double
      out += "  " + c.label + " " + buf + " " + std::to_string(c.bytes) + " " +
             std::to_string(c.macs) + " " + std::to_string(c.params) + "\n";
    }
  }
  return out;
}

/// Same names, order, layouts, dtypes, shapes and bytes.
void expect_same_weights(const testing::Analysed& a, const testing::Analysed& b) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    const graph::WeightView &x = a.weights[i], &y = b.weights[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.layout, y.layout) << x.name;
    EXPECT_EQ(x.tensor.dtype(), y.tensor.dtype()) << x.name;
    ASSERT_EQ(x.tensor.shape(), y.tensor.shape()) << x.name;
    ASSERT_EQ(x.tensor.nbytes(), y.tensor.nbytes()) << x.name;
    EXPECT_EQ(std::memcmp(x.tensor.raw(), y.tensor.raw(), x.tensor.nbytes()), 0) << x.name;
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

TEST(OnnxMapped, SameWeightsAsTheParserLargePayloadsMapped) {
  TempDir dir;
  std::string bytes;
  ASSERT_TRUE(sample_model().SerializeToString(&bytes));
  const std::string path = save(dir, bytes, "sample.onnx");
  const testing::Analysed parsed = testing::analysed(read_onnx(path)),
                          mapped = testing::analysed(read_onnx_mapped(path));
  expect_same_weights(parsed, mapped);
  ASSERT_EQ(mapped.weights.size(), 4u);
  EXPECT_TRUE(mapped.find("mm")->tensor.is_mapped());
  EXPECT_TRUE(mapped.find("gemm")->tensor.is_mapped());  // packed float_data
  EXPECT_TRUE(mapped.find("const")->tensor.is_mapped());
  // The large payloads view the file's mapping; "bias" (under 4096 bytes) stays
  // inline, in the parsed structure.
  const std::shared_ptr<Storage>& file = mapped.find("mm")->tensor.storage();
  EXPECT_EQ(mapped.find("gemm")->tensor.storage(), file);
  EXPECT_EQ(mapped.find("const")->tensor.storage(), file);
  EXPECT_NE(mapped.find("bias")->tensor.storage(), file);
  EXPECT_EQ(file->size(), bytes.size());
  EXPECT_EQ(mapped.find("mm")->layout, WeightLayout::in_out);
  EXPECT_EQ(mapped.find("gemm")->layout, WeightLayout::in_out);
  // The view is the payload's bytes in the file: raw_data of "mm" is its f32 values.
  const Tensor& mm = mapped.find("mm")->tensor;
  const size_t offset =
      bytes.find(std::string(reinterpret_cast<const char*>(parsed.find("mm")->tensor.raw()), 8192));
  ASSERT_NE(offset, std::string::npos);
  EXPECT_EQ(mm.offset(), offset);
  EXPECT_EQ(mapped.find("mm")->out_in().to_f32_vector(),
            parsed.find("mm")->out_in().to_f32_vector());
}

TEST(OnnxMapped, RecogniserGivesTheParsedPathsProfileBitForBit) {
  const std::string rec = testing::model_path("ch_PP-OCRv4_rec_infer.onnx");
  if (!std::filesystem::exists(rec))
    FAIL() << rec << " absent: run scripts/fetch-models.sh (make test does)";
  const testing::Analysed parsed = testing::analysed(read_onnx(rec)),
                          mapped = testing::analysed(read_onnx_mapped(rec));
  expect_same_weights(parsed, mapped);
  ProfileOptions o;
  o.schemes = {"int8", "int4-g64", "sparse-2:4", "ternary"};
  o.threads = 2;
  const ModelProfile a = profile_model(parsed.model, o), b = profile_model(mapped.model, o);
  EXPECT_EQ(without_timings(a), without_timings(b));
  // Low-rank (randomized SVDs, seeded) on a few layers too.
  o.schemes = {"lowrank"};
  o.layer_regex = "conv|fc|linear";
  o.min_params = 20000;
  const ModelProfile c = profile_model(parsed.model, o), d = profile_model(mapped.model, o);
  EXPECT_FALSE(c.layers.empty());
  EXPECT_EQ(without_timings(c), without_timings(d));
}

TEST(OnnxMappedMalformed, EveryTruncationIsAOneLineErrorNamingTheFile) {
  TempDir dir;
  std::string bytes;
  ASSERT_TRUE(sample_model().SerializeToString(&bytes));
  // Every cut inside the graph (the opset_import field, 4 bytes, follows it).
  ASSERT_EQ(bytes.substr(bytes.size() - 4, 2), std::string("\x42\x02", 2));
  for (size_t cut = 1; cut < bytes.size() - 4; cut += 61) {
    const std::string path = save(dir, bytes.substr(0, cut), "cut.onnx");
    testing::expect_error_naming([&] { read_onnx_mapped(path); }, path, "");
  }
}

// read_onnx (inspect, run) and read_onnx_mapped (profile) refuse a truncated
// file with the same message: the wire walker's, naming the field's byte offset.
TEST(OnnxMappedMalformed, ParsedReaderGivesTheWireWalkersTruncationMessage) {
  TempDir dir;
  std::string bytes;
  ASSERT_TRUE(sample_model().SerializeToString(&bytes));
  const auto message = [](auto&& read) {
    try {
      read();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  int walked = 0;
  for (size_t cut = 1; cut < bytes.size() - 4; cut += 61) {
    const std::string path = save(dir, bytes.substr(0, cut), "cut.onnx");
    const std::string parsed = message([&] { read_onnx(path); });
    EXPECT_EQ(parsed, message([&] { read_onnx_mapped(path); })) << "cut at " << cut;
    EXPECT_EQ(parsed.find("protobuf parse failed"), std::string::npos) << parsed;
    walked += parsed.find("not a valid ONNX model: ONNX wire format") != std::string::npos &&
              parsed.find(" field at byte ") != std::string::npos;
  }
  EXPECT_GT(walked, 0);
}

TEST(OnnxMappedMalformed, LyingLengthsAndOffsetsPastTheEnd) {
  TempDir dir;
  std::string bytes;
  ASSERT_TRUE(sample_model().SerializeToString(&bytes));
  // A graph field (7, length-delimited) declaring 2^40 bytes.
  const std::string lying = bytes + std::string("\x3a\x80\x80\x80\x80\x80\x20", 7);
  const std::string p1 = save(dir, lying, "lying.onnx");
  testing::expect_error_naming([&] { read_onnx_mapped(p1); }, p1, "declares 1099511627776 bytes");
  // A wire type 3 (group start) field.
  const std::string group = bytes + std::string("\x0b", 1);
  const std::string p2 = save(dir, group, "group.onnx");
  testing::expect_error_naming([&] { read_onnx_mapped(p2); }, p2, "wire type 3");
  // External data naming the model itself with an offset past its end.
  onnx::ModelProto m = sample_model();
  TP* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_raw_data();
  t->set_data_location(TP::EXTERNAL);
  for (auto [k, v] : {std::pair<const char*, const char*>{"location", "self.onnx"},
                      {"offset", "999999999"},
                      {"length", "8192"}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  std::string s;
  ASSERT_TRUE(m.SerializeToString(&s));
  const std::string p3 = save(dir, s, "self.onnx");
  testing::expect_error_naming([&] { read_onnx_mapped(p3); }, p3, "exceeds file");
  // raw_data whose length disagrees with the shape.
  onnx::ModelProto short_raw = sample_model();
  short_raw.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(5000, '\0'));
  ASSERT_TRUE(short_raw.SerializeToString(&s));
  const std::string p4 = save(dir, s, "short.onnx");
  testing::expect_error_naming([&] { read_onnx_mapped(p4); }, p4,
                               "length is 5000 bytes, shape [64, 32] f32 needs 8192");
}

}  // namespace
}  // namespace tailor
