// `tailor profile --objective output`: the output damage compress measures,
// measured by profile on the same calibration inputs and cached under the key
// compress uses, and sharded by layer (--shard I/N + profile-merge) with the
// one-process values bit for bit; its refusals.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tailor/core/tensor.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/safetensors.h"
#include "test_util.h"

namespace tailor {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

const std::string kCls = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");

/// run_cli with TAILOR_CACHE_DIR set to `cache`.
testing::CommandResult cli_cached(const std::string& cache, const std::string& args) {
  const std::string cmd =
      "env TAILOR_CACHE_DIR=" + cache + " " + std::string(TAILOR_CLI) + " " + args + " 2>&1";
  testing::CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::array<char, 4096> buf{};
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;)
    r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(ProfileDamage, EqualsCompressAndShardsMergeToTheOneProcessProfile) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  const TempDir dir;
  const std::string cache = dir.file("cache"), fast = " --schemes int8,int4,lowrank ";
  // compress measures D and stores its profile in the cache under its key.
  const auto c = cli_cached(cache, "compress " + kCls + " --budget 60%" + fast +
                                       "--threads 1 --no-guard -o " + dir.file("out"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  // profile --objective output --cache computes the same key: compress's entry is read back.
  const auto hit = cli_cached(cache, "profile " + kCls + " --objective output --cache" + fast +
                                         "--threads 1 -o " + dir.file("cached.json"));
  ASSERT_EQ(hit.exit_code, 0) << hit.output;
  EXPECT_NE(hit.output.find("cached profile"), std::string::npos) << hit.output;
  // Measured anew by profile (2 threads, no cache): the bytes compress stored.
  const auto one = cli_cached(dir.file("none"), "profile " + kCls + " --objective output" + fast +
                                                    "--threads 2 -o " + dir.file("one.json"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string one_text = read_file(dir.file("one.json"));
  EXPECT_EQ(one_text, read_file(dir.file("cached.json")));
  const auto j = nlohmann::json::parse(one_text);
  EXPECT_EQ(j["output_metric"], "kl");  // the classifier ends in a Softmax
  EXPECT_NE(j["calibration"].get<std::string>().find("4 random N(0, 1) inputs (seed 2)"),
            std::string::npos);
  size_t measured = 0;
  for (const auto& l : j["layers"])
    for (const auto& cand : l["candidates"]) {
      ASSERT_TRUE(cand.contains("output_damage")) << l["name"] << " " << cand["label"];
      if (cand["label"] == "dense") {
        EXPECT_EQ(cand["output_damage"].get<double>(), 0.0);
      }
      measured += cand["label"] != "dense" && cand["output_damage"].get<double>() > 0;
    }
  EXPECT_GE(measured, 2 * j["layers"].size());  // int8 and int4 at least
  // Two shards, one thread each, each measuring only its own layers; merged
  // and stored in the cache: the one-process profile byte for byte.
  const std::string shards = dir.file("shards");
  for (int i = 0; i < 2; ++i) {
    const auto s = cli_cached(shards, "profile " + kCls + " --objective output" + fast +
                                          "--threads 1 --shard " + std::to_string(i) + "/2 -o " +
                                          dir.file("s" + std::to_string(i) + ".json"));
    ASSERT_EQ(s.exit_code, 0) << s.output;
  }
  const auto m = cli_cached(shards, "profile-merge --cache " + dir.file("s1.json") + " " +
                                        dir.file("s0.json") + " -o " + dir.file("merged.json"));
  ASSERT_EQ(m.exit_code, 0) << m.output;
  EXPECT_EQ(read_file(dir.file("merged.json")), one_text);
  // A shard's part holds only its own layers, each with its damage.
  const auto s0 = nlohmann::json::parse(read_file(dir.file("s0.json")));
  const auto s1 = nlohmann::json::parse(read_file(dir.file("s1.json")));
  EXPECT_EQ(s0["profile"]["layers"].size() + s1["profile"]["layers"].size(), j["layers"].size());
  EXPECT_GT(s1["profile"]["layers"].size(), 0u);
  // A rerun of shard 1 finds every layer in the layer cache with its damage
  // (stored as each layer finished) and writes the same shard file.
  const auto again = cli_cached(shards, "profile " + kCls + " --objective output" + fast +
                                            "--threads 1 --shard 1/2 -o " + dir.file("again.json"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const size_t n1 = s1["profile"]["layers"].size();
  EXPECT_NE(
      again.output.find(fmt::format("of {} layers ({} with their damage from the cache)", n1, n1)),
      std::string::npos)
      << again.output;
  EXPECT_EQ(read_file(dir.file("again.json")), read_file(dir.file("s1.json")));
  // The merged entry is what compress finds in that cache.
  const auto reuse = cli_cached(shards, "compress " + kCls + " --budget 60%" + fast +
                                            "--threads 1 --no-guard -o " + dir.file("out2"));
  ASSERT_EQ(reuse.exit_code, 0) << reuse.output;
  EXPECT_NE(reuse.output.find("from the profile cache"), std::string::npos) << reuse.output;
}

TEST(ProfileDamage, RefusesWhatItCannotMeasure) {
  const TempDir dir;
  // Weights with no graph to run: no calibration inputs. One line naming the file.
  const std::string st = dir.file("plain.safetensors");
  write_safetensors(st, {{"w", Tensor::zeros(DType::f32, {64, 128})}}, {});
  auto r = run_cli("profile " + st + " --objective output -o " + dir.file("p.json"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(st + ": --objective output runs the model on calibration inputs"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("give an ONNX model or a llama checkpoint"), std::string::npos);
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("p.json")));
  r = run_cli("profile " + st + " --objective numel");
  EXPECT_NE(r.output.find("--objective: profile measures only \"output\""), std::string::npos)
      << r.output;
  r = run_cli("profile " + st + " --inputs 2");
  EXPECT_NE(r.output.find("--inputs: applies only with --objective output"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace tailor
