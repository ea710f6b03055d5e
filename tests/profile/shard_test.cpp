// Sharded profiling: the cost-ordered deal of layers to shards, the --shard
// and profile-merge commands (their merge equals the one-process profile byte
// for byte), the layer cache a rerun reuses, and the merge's refusals.
#include "tailor/profile/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::fixture_path;
using testing::run_cli;
using testing::TempDir;
using testing::write_bytes;

TEST(ProfileShard, CostGrowsWithSizeAndTheSmallerSide) {
  // out·in·(64 + min(out, in)), by hand.
  EXPECT_DOUBLE_EQ(layer_cost(64, 172), 64.0 * 172 * (64 + 64));
  EXPECT_DOUBLE_EQ(layer_cost(4096, 11008), 4096.0 * 11008 * (64 + 4096));
  EXPECT_GT(layer_cost(512, 512), layer_cost(2048, 64));  // same numel, larger smaller side
}

TEST(ProfileShard, LargestFirstToTheLeastLoadedShard) {
  // Costs 7, 5, 4, 3, 3, 1 on 2 shards, by hand (Graham's LPT): 7→0, 5→1,
  // 4→1 (5 < 7), 3→0 (7 < 9), 3 (index 4)→1 (9 < 10; ties go to the lower
  // shard), 1→0 (10 < 12).
  std::vector<PlannedLayer> layers;
  for (double c : {3.0, 7.0, 1.0, 5.0, 3.0, 4.0}) layers.push_back({"l", 1, 1, c});
  const std::vector<int> owner = shard_layers(layers, 2);
  EXPECT_EQ(owner, (std::vector<int>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(layers_of_shard(owner, 1), (std::vector<size_t>{3, 4, 5}));
  // More shards than layers: the extra shards get nothing.
  EXPECT_EQ(shard_layers(layers, 8), (std::vector<int>{3, 0, 5, 1, 4, 2}));
  EXPECT_THROW(shard_layers(layers, 0), Error);
}

TEST(ProfileShard, ParsesIOverN) {
  EXPECT_EQ(parse_shard("0/1"), (std::pair<int, int>{0, 1}));
  EXPECT_EQ(parse_shard("3/4"), (std::pair<int, int>{3, 4}));
  // Malformed and out of range read alike: one wording for both.
  for (const char* bad : {"4/4", "1/0", "-1/2", "1", "a/b", "1/2/3", ""})
    testing::expect_error_naming([&] { parse_shard(bad); }, "--shard",
                                 std::string("expected I/N with 0 ≤ I < N, found \"") + bad + "\"");
}

/// TAILOR_CACHE_DIR set to `dir` for the command.
std::string with_cache(const TempDir& dir, const std::string& args) {
  return "env TAILOR_CACHE_DIR=" + dir.file("cache") + " " + std::string(TAILOR_CLI) + " " + args;
}

int sh(const std::string& cmd) {
  return std::system((cmd + " > /dev/null 2>&1").c_str());
}

TEST(ProfileShard, MergedShardsEqualTheOneProcessProfile) {
  const TempDir dir;
  const std::string model = fixture_path("stories260K.bin");
  const auto one = run_cli("profile " + model + " --threads 1 -o " + dir.file("one.json"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  // Shard 0 names its file; shards 1 and 2, run in one folder without -o,
  // write profile.shard-I-of-3.json each.
  ASSERT_EQ(sh(with_cache(
                dir, "profile " + model + " --threads 1 --shard 0/3 -o " + dir.file("s0.json"))),
            0);
  for (int i = 1; i < 3; ++i) {
    ASSERT_EQ(sh("cd " + dir.path().string() + " && " +
                 with_cache(
                     dir, "profile " + model + " --threads 1 --shard " + std::to_string(i) + "/3")),
              0);
    std::filesystem::rename(dir.file("profile.shard-" + std::to_string(i) + "-of-3.json"),
                            dir.file("s" + std::to_string(i) + ".json"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("profile.json")));
  // Any order of the shard files.
  const auto merged = run_cli("profile-merge " + dir.file("s2.json") + " " + dir.file("s0.json") +
                              " " + dir.file("s1.json") + " -o " + dir.file("merged.json"));
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_NE(merged.output.find("merged 3 shards, 26 layers"), std::string::npos) << merged.output;
  EXPECT_EQ(read_file(dir.file("merged.json")), read_file(dir.file("one.json")));

  // A rerun of a shard takes every one of its layers from the layer cache and
  // writes the same shard file.
  const std::string again = dir.file("again.json");
  FILE* p = ::popen(
      (with_cache(dir, "profile " + model + " --threads 1 --shard 1/3 -o " + again) + " 2>&1")
          .c_str(),
      "r");
  ASSERT_NE(p, nullptr);
  std::string out(4096, '\0');
  out.resize(std::fread(out.data(), 1, out.size(), p));
  ASSERT_EQ(::pclose(p), 0) << out;
  const ProfileShard s1 = read_shard(dir.file("s1.json"));
  EXPECT_NE(out.find(std::to_string(s1.part.layers.size()) + " of 26 layers (" +
                     std::to_string(s1.part.layers.size()) + " from the cache)"),
            std::string::npos)
      << out;
  EXPECT_EQ(read_file(again), read_file(dir.file("s1.json")));
}

TEST(ProfileShard, MergeRefusesMismatchedShardSets) {
  const TempDir dir;
  const std::string model = fixture_path("stories260K.bin");
  const std::string fast = " --threads 1 --schemes int8,int4 ";
  auto shard = [&](const std::string& spec, const std::string& name, const std::string& extra) {
    ASSERT_EQ(sh(with_cache(dir, "profile " + model + fast + extra + " --shard " + spec + " -o " +
                                     dir.file(name))),
              0);
  };
  shard("0/2", "a0.json", "");
  shard("1/2", "a1.json", "");
  shard("1/2", "other_settings.json", "--min-params 8192");
  shard("1/3", "other_count.json", "");
  auto refused = [&](const std::string& files, const std::string& named,
                     const std::string& needle) {
    const auto r = run_cli("profile-merge " + files + " -o " + dir.file("m.json"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  };
  const std::string a0 = dir.file("a0.json"), a1 = dir.file("a1.json");
  refused(a0 + " " + dir.file("other_settings.json"), dir.file("other_settings.json"),
          "another model or with other settings");
  refused(a0 + " " + dir.file("other_count.json"), dir.file("other_count.json"),
          "is shard 1/3, but");
  refused(a0 + " " + a0, a0, "shard 0/2 is given twice");
  refused(a1, a1, "shard 0/2 is missing");
  write_bytes(dir.file("junk.json"), "{\"format\": \"something else\"}");
  refused(a0 + " " + dir.file("junk.json"), dir.file("junk.json"), "not a tailor profile shard");
  const auto ok = run_cli("profile-merge " + a1 + " " + a0 + " -o " + dir.file("m.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  // A shard given where a profile belongs says so and names the merge.
  const auto plan = run_cli("plan " + a0 + " --budget 50%");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_NE(plan.output.find(a0 + ": a profile shard (tailor profile --shard), not a profile"),
            std::string::npos)
      << plan.output;
}

}  // namespace
}  // namespace tailor
