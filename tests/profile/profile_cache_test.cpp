// The profile cache: misses, hits, what the key depends on, and entries that
// are corrupt or altered (ignored with a warning, never trusted).
#include "tailor/profile/profile_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;

/// Points TAILOR_CACHE_DIR at a fresh folder for the test's lifetime.
class CacheDir {
 public:
  CacheDir() {
    const char* old = std::getenv("TAILOR_CACHE_DIR");
    if (old) old_ = old;
    had_ = old != nullptr;
    ::setenv("TAILOR_CACHE_DIR", dir_.path().c_str(), 1);
  }
  ~CacheDir() {
    if (had_)
      ::setenv("TAILOR_CACHE_DIR", old_.c_str(), 1);
    else
      ::unsetenv("TAILOR_CACHE_DIR");
  }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::string old_;
  bool had_ = false;
};

ModelProfile sample_profile() {
  ModelProfile p;
  p.model = "m.onnx";
  p.dense_bytes = 4 * 64 * 32 + 400;
  p.fixed_bytes = 400;
  LayerProfile l;
  l.name = "fc.weight";
  l.shape_out_in = {64, 32};
  l.numel = 64 * 32;
  l.dense_bytes = 4 * l.numel;
  l.candidates = {{"dense", 0.0, 8192, 2048, 2048, 0.0, std::nullopt},
                  {"int8", 0.0041234567890123, 2176, 2048, 2112, 0.00013, 0.0035}};
  p.layers.push_back(l);
  return p;
}

TEST(ProfileCache, DirFollowsTheEnvironment) {
  CacheDir cache;
  EXPECT_EQ(profile_cache_dir(), (cache.dir().path() / "profiles").string());
}

TEST(ProfileCache, MissThenHitGivesTheSameProfile) {
  CacheDir cache;
  TempDir dir;
  testing::write_bytes(dir.file("m.bin"), "model bytes");
  const std::string key = profile_cache_key(dir.file("m.bin"), ProfileOptions{});
  EXPECT_EQ(key.size(), 64u);
  EXPECT_FALSE(load_cached_profile(key).has_value());
  const ModelProfile p = sample_profile();
  ASSERT_TRUE(store_cached_profile(key, p));
  EXPECT_TRUE(std::filesystem::exists(cache.dir().path() / "profiles" / (key + ".json")));
  const std::optional<ModelProfile> hit = load_cached_profile(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(profile_to_json(*hit), profile_to_json(p));
  EXPECT_DOUBLE_EQ(hit->layers[0].candidates[1].rel_error, 0.0041234567890123);
  ASSERT_TRUE(hit->layers[0].candidates[1].rel_error_activation.has_value());
  EXPECT_FALSE(hit->layers[0].candidates[0].rel_error_activation.has_value());
}

TEST(ProfileCache, KeyDependsOnBytesSchemesAndSettings) {
  TempDir dir;
  testing::write_bytes(dir.file("a.bin"), "model bytes");
  testing::write_bytes(dir.file("b.bin"), "model bytes");  // same bytes, other name
  testing::write_bytes(dir.file("c.bin"), "model byteS");
  ProfileOptions o;
  const std::string base = profile_cache_key(dir.file("a.bin"), o);
  EXPECT_EQ(profile_cache_key(dir.file("b.bin"), o), base);
  EXPECT_NE(profile_cache_key(dir.file("c.bin"), o), base);

  ProfileOptions s1 = o, s2 = o, s3 = o;
  s1.schemes = {"int8", "lowrank"};
  s2.schemes = {"lowrank", "int8", "int8"};  // order and repeats do not change a profile
  s3.schemes = {"int8"};
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), s1), base);
  EXPECT_EQ(profile_cache_key(dir.file("a.bin"), s2), profile_cache_key(dir.file("a.bin"), s1));
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), s3), profile_cache_key(dir.file("a.bin"), s1));

  ProfileOptions m = o;
  m.min_params = 1;
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), m), base);
  ProfileOptions t = o;
  t.threads = 7;  // threads do not change a profile
  EXPECT_EQ(profile_cache_key(dir.file("a.bin"), t), base);
  ProfileOptions r = o;
  r.layer_regex = "conv";
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), r), base);

  testing::write_bytes(dir.file("calib1"), "x");
  testing::write_bytes(dir.file("calib2"), "y");
  ProfileOptions c1 = o, c2 = o;
  c1.calib = dir.file("calib1");
  c2.calib = dir.file("calib2");
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), c1), base);
  EXPECT_NE(profile_cache_key(dir.file("a.bin"), c1), profile_cache_key(dir.file("a.bin"), c2));
  testing::expect_error_naming([&] { profile_cache_key(dir.file("nope"), o); }, dir.file("nope"),
                               "no such file");
}

TEST(ProfileCache, CorruptEntryIsIgnoredWithAWarning) {
  CacheDir cache;
  TempDir dir;
  testing::write_bytes(dir.file("m.bin"), "model bytes");
  const std::string key = profile_cache_key(dir.file("m.bin"), ProfileOptions{});
  ASSERT_TRUE(store_cached_profile(key, sample_profile()));
  const std::string path = (cache.dir().path() / "profiles" / (key + ".json")).string();
  const std::string good = read_file(path);

  // Truncated: not JSON.
  testing::write_bytes(path, good.substr(0, good.size() / 2));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(load_cached_profile(key).has_value());
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning"), std::string::npos) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;

  // Valid JSON and a valid profile, one number altered: the checksum catches it.
  nlohmann::json j = nlohmann::json::parse(good);
  j["profile"]["layers"][0]["candidates"][1]["rel_error"] = 0.001;
  testing::write_bytes(path, j.dump());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(load_cached_profile(key).has_value());
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;

  // An entry copied under another key.
  const std::string other(64, 'a');
  testing::write_bytes((cache.dir().path() / "profiles" / (other + ".json")).string(), good);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(load_cached_profile(other).has_value());
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("another key"), std::string::npos) << err;

  // Storing again repairs it.
  ASSERT_TRUE(store_cached_profile(key, sample_profile()));
  EXPECT_TRUE(load_cached_profile(key).has_value());
}

TEST(ProfileCache, KeyMustBeHex) {
  CacheDir cache;
  EXPECT_THROW(load_cached_profile("../../etc/passwd"), Error);
  EXPECT_THROW(store_cached_profile(std::string(64, 'g'), sample_profile()), Error);
}

TEST(ProfileCache, CliReusesTheCachedProfile) {
  CacheDir cache;
  TempDir dir;
  const std::string model = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "models not fetched: " << model;
  const std::string args = "profile '" + model + "' --schemes int8 --threads 1 --cache -o '";
  const auto first = testing::run_cli(args + dir.file("p1.json") + "'");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.output.find("cached profile"), std::string::npos) << first.output;
  const auto second = testing::run_cli(args + dir.file("p2.json") + "'");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("cached profile"), std::string::npos) << second.output;
  EXPECT_EQ(read_file(dir.file("p1.json")), read_file(dir.file("p2.json")));
}

}  // namespace
}  // namespace tailor
