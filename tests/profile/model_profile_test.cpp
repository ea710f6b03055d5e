#include "tailor/profile/model_profile.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::expect_error_naming;
using testing::TempDir;
using testing::write_bytes;

ModelProfile sample_profile() {
  ModelProfile p;
  p.model = "models/tiny.onnx";
  p.dense_bytes = 4 * (64 * 32 + 16 * 64) + 400;
  p.fixed_bytes = 400;
  LayerProfile a;
  a.name = "fc1.weight";
  a.shape_out_in = {64, 32};
  a.numel = 64 * 32;
  a.dense_bytes = 4 * a.numel;
  a.candidates = {{"dense", 0.0, 8192, 2048, 2048, 0.0, std::nullopt},
                  {"int8", 0.0041, 2176, 2048, 2048, 0.0012, 0.0035},
                  {"lowrank-r8", 0.3125, 3072, 768, 768, 0.25, std::nullopt}};
  LayerProfile b;
  b.name = "fc2.weight";
  b.shape_out_in = {16, 64};
  b.numel = 16 * 64;
  b.dense_bytes = 4 * b.numel;
  b.candidates = {{"dense", 0.0, 4096, 1024, 1024, 0.0, std::nullopt}};
  p.layers = {a, b};
  return p;
}

TEST(ProfileJson, RoundTripsEveryField) {
  TempDir dir;
  const ModelProfile p = sample_profile();
  write_profile(dir.file("profile.json"), p);
  const ModelProfile q = read_profile(dir.file("profile.json"));
  EXPECT_EQ(q.model, p.model);
  EXPECT_EQ(q.dense_bytes, p.dense_bytes);
  EXPECT_EQ(q.fixed_bytes, p.fixed_bytes);
  ASSERT_EQ(q.layers.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(q.layers[i].name, p.layers[i].name);
    EXPECT_EQ(q.layers[i].shape_out_in, p.layers[i].shape_out_in);
    EXPECT_EQ(q.layers[i].numel, p.layers[i].numel);
    EXPECT_EQ(q.layers[i].dense_bytes, p.layers[i].dense_bytes);
    ASSERT_EQ(q.layers[i].candidates.size(), p.layers[i].candidates.size());
    for (size_t j = 0; j < p.layers[i].candidates.size(); ++j) {
      const Candidate &x = p.layers[i].candidates[j], &y = q.layers[i].candidates[j];
      EXPECT_EQ(y.label, x.label);
      EXPECT_EQ(y.rel_error, x.rel_error);  // shortest round-trip digits: exact
      EXPECT_EQ(y.bytes, x.bytes);
      EXPECT_EQ(y.macs, x.macs);
      EXPECT_EQ(y.params, x.params);
      EXPECT_EQ(y.encode_seconds, 0);  // a timing: never written (byte-reproducible files)
      EXPECT_EQ(y.rel_error_activation, x.rel_error_activation);
    }
  }
}

TEST(ProfileJson, WritesTheDocumentedSchema) {
  const nlohmann::json j = nlohmann::json::parse(profile_to_json(sample_profile()));
  for (const char* key : {"model", "dense_bytes", "fixed_bytes", "layers"})
    EXPECT_TRUE(j.contains(key)) << key;
  const auto& layer = j["layers"][0];
  for (const char* key : {"name", "shape_out_in", "numel", "dense_bytes", "candidates"})
    EXPECT_TRUE(layer.contains(key)) << key;
  for (const char* key : {"label", "rel_error", "bytes", "macs", "rel_error_activation"})
    EXPECT_TRUE(layer["candidates"][1].contains(key)) << key;
  EXPECT_FALSE(layer["candidates"][0].contains("rel_error_activation"));
  EXPECT_FALSE(layer["candidates"][1].contains("encode_seconds"));  // 0.0012 in the sample
}

TEST(ProfileJson, ReadsTheMinimalSchema) {
  TempDir dir;
  const std::string path = dir.file("min.json");
  write_bytes(path, R"({"model": "m", "dense_bytes": 100, "fixed_bytes": 4, "layers": [
    {"name": "w", "shape_out_in": [2, 3], "numel": 6, "dense_bytes": 24,
     "candidates": [{"label": "dense", "rel_error": 0, "bytes": 24, "macs": 6}]}]})");
  const ModelProfile p = read_profile(path);
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].candidates[0].params, 0);
  EXPECT_EQ(p.layers[0].candidates[0].encode_seconds, 0);
  EXPECT_FALSE(p.layers[0].candidates[0].rel_error_activation);
}

// One malformed variant per check, made by editing the valid sample's JSON.
TEST(ProfileJson, RejectsMalformedProfilesNamingFileAndPlace) {
  TempDir dir;
  const std::string path = dir.file("bad.json");
  auto expect_rejected = [&](const std::function<void(nlohmann::json&)>& edit,
                             const std::string& needle) {
    nlohmann::json j = nlohmann::json::parse(profile_to_json(sample_profile()));
    edit(j);
    write_bytes(path, j.dump());
    SCOPED_TRACE(needle);
    expect_error_naming([&] { read_profile(path); }, path, needle);
  };
  expect_rejected([](auto& j) { j.erase("fixed_bytes"); }, "missing field \"fixed_bytes\"");
  expect_rejected([](auto& j) { j["layers"][1].erase("numel"); }, "layers[1] (\"fc2.weight\")");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][2]["bytes"] = -5; },
                  "candidates[2]: \"bytes\" must be ≥ 0");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][1]["rel_error"] = nullptr; },
                  "\"rel_error\" must be a number");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][1]["rel_error"] = -0.1; },
                  "\"rel_error\" must be finite and ≥ 0");
  expect_rejected([](auto& j) { j["layers"][1]["candidates"] = nlohmann::json::array(); },
                  "empty \"candidates\"");
  expect_rejected([](auto& j) { j["layers"][1]["name"] = "fc1.weight"; },
                  "duplicate layer name \"fc1.weight\"");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][2]["label"] = "int8"; },
                  "duplicate candidate label \"int8\"");
  expect_rejected(
      [](auto& j) {
        j["layers"][0]["shape_out_in"] = {64, 31};
      },
      "does not hold \"numel\"");
  expect_rejected([](auto& j) { j["layers"][0]["shape_out_in"] = {64}; }, "must be [out, in]");
  expect_rejected([](auto& j) { j["dense_bytes"] = 1.5; }, "\"dense_bytes\" must be an integer");
  expect_rejected([](auto& j) { j["layers"] = 3; }, "\"layers\" must be an array");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][0]["macs"] = "many"; },
                  "\"macs\" must be an integer");
  expect_rejected([](auto& j) { j["layers"][0]["candidates"][1]["rel_error_activation"] = -1; },
                  "\"rel_error_activation\" must be finite");
  // Accepted before: an empty layer name, a layer's dense_bytes that is not
  // 4 · numel, a total below its parts.
  expect_rejected([](auto& j) { j["layers"][1]["name"] = ""; }, "layers[1]: empty \"name\"");
  expect_rejected([](auto& j) { j["layers"][0]["dense_bytes"] = 100; },
                  "layers[0] (\"fc1.weight\"): \"dense_bytes\" = 100 is not 4 · numel = 4 · 2048");
  expect_rejected([](auto& j) { j["dense_bytes"] = 12288; },  // 400 + 8192 + 4096 = 12688
                  "\"dense_bytes\" = 12288 is less than fixed_bytes + the layers' dense_bytes = "
                  "12688");
}

TEST(ProfileJson, RejectsNaNAndBrokenJson) {
  TempDir dir;
  const std::string path = dir.file("nan.json");
  write_bytes(path, R"({"model": "m", "dense_bytes": 1, "fixed_bytes": 0, "layers": [
    {"name": "w", "shape_out_in": [1, 1], "numel": 1, "dense_bytes": 4,
     "candidates": [{"label": "dense", "rel_error": NaN, "bytes": 4, "macs": 1}]}]})");
  expect_error_naming([&] { read_profile(path); }, path, "not valid JSON");
  write_bytes(path, "{\"model\": ");
  expect_error_naming([&] { read_profile(path); }, path, "not valid JSON");
  expect_error_naming([&] { read_profile(dir.file("missing.json")); }, dir.file("missing.json"),
                      "missing.json");
  // A repeated key, legal JSON that nlohmann read as its last value: the
  // second "layers" (empty) silently replaced the first.
  write_bytes(path, R"({"model": "m", "dense_bytes": 4, "fixed_bytes": 0, "layers": [
    {"name": "w", "shape_out_in": [1, 1], "numel": 1, "dense_bytes": 4,
     "candidates": [{"label": "dense", "rel_error": 0, "bytes": 4, "macs": 1}]}],
     "layers": []})");
  expect_error_naming([&] { read_profile(path); }, path, "key \"layers\" appears twice");
  // The same name in two different objects is no repeat.
  write_bytes(path, R"({"model": "m", "dense_bytes": 4, "fixed_bytes": 0, "layers": [
    {"name": "w", "shape_out_in": [1, 1], "numel": 1, "dense_bytes": 4,
     "candidates": [{"label": "dense", "rel_error": 0, "bytes": 4, "macs": 1}]}]})");
  EXPECT_EQ(read_profile(path).layers.size(), 1u);
}

}  // namespace
}  // namespace tailor
