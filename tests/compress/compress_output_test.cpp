// tailor compress through the CLI: its output folder (a run killed with
// SIGKILL, an -o that is a symlink to a folder, byte-reproducible files), the
// OCR task files, and a llama model.onnx it wrote run past its context.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "runtime/op_test_util.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/npy.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

const std::string kCls = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CompressOutput, KilledWhileVerifyingTheNextRunClearsTheStagingFolder) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string args =
      "compress " + kCls + " --budget 50% --no-cache --inputs 1 --threads 1 -o " + out;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(TAILOR_CLI, TAILOR_CLI, "compress", kCls.c_str(), "--budget", "50%", "--no-cache",
            "--inputs", "1", "--threads", "1", "-o", out.c_str(), nullptr);
    ::_exit(127);
  }
  // The known point: plan.json staged (written after the weights), verification running.
  const fs::path staged = dir.path() / (".out.tmp-" + std::to_string(pid)) / "plan.json";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(staged) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(fs::exists(staged)) << "the run never staged its files";
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "finished before it was killed";
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{".out.tmp-" + std::to_string(pid)}));

  const auto r = testing::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"out"}));
  EXPECT_EQ(entries(out),
            (std::vector<std::string>{"model.onnx", "plan.json", "weights.safetensors"}));
}

TEST(CompressOutput, AnOutputSymlinkToAFolderIsWrittenThrough) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  fs::create_directory(dir.file("real"));
  fs::create_directory_symlink(dir.file("real"), dir.file("link"));
  const auto r =
      testing::run_cli("compress " + kCls + " --budget 50% --no-cache --inputs 1 --threads 1 -o " +
                       dir.file("link"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_EQ(entries(dir.file("real")),
            (std::vector<std::string>{"model.onnx", "plan.json", "weights.safetensors"}));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"link", "real"}));
}

// Beside Σ D, compress prints the written plan's damage run whole on the
// calibration inputs: the guard's figure and interval for the plan it kept, and the folds
// its -gptq layers were cross-fitted in (4 random calibration inputs: 4
// folds; no -gptq label: none said).
TEST(CompressOutput, PrintsTheKeptPlansWholeCalibrationDamage) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  for (const bool gptq : {true, false}) {
    TempDir dir;
    const auto r =
        testing::run_cli("compress " + kCls + " --budget 50% --no-cache --threads 1" +
                         (gptq ? "" : " --schemes dense,int8,int4") + " -o " + dir.file("out"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string kept_end = "  kept\n";
    const size_t kept = r.output.find(kept_end);
    ASSERT_NE(kept, std::string::npos) << r.output;
    const size_t line = r.output.rfind('\n', kept) + 1;
    const std::string listing = r.output.substr(line, kept - line);
    // The figure and its interval over the 4 inputs, "0.00187 (95% a–b)".
    const std::string damage = listing.substr(listing.find("damage ") + 7);
    const std::string whole = "run whole on the calibration inputs (uniform guard" +
                              std::string(gptq ? ", -gptq layers cross-fitted in 4 folds" : "") +
                              ") " + damage.substr(0, damage.find(')') + 1) + ", measured/that ";
    EXPECT_NE(damage.find(" (95% "), std::string::npos) << listing;
    EXPECT_NE(r.output.find(whole), std::string::npos) << whole << "\n" << r.output;
  }
}

// Issue 17 saw a llama model.onnx run past its context fail inside an
// internal broadcast; llm::check_decoder_feeds (8d7113f) names the input.
TEST(CompressOutput, ALlamaModelOnnxRunPastItsContextIsAOneLineError) {
  TempDir dir;
  const auto c = testing::run_cli("compress " + testing::fixture_path("stories260K.bin") +
                                  " --budget 60% --min-params 1 --schemes dense,int8 --no-cache "
                                  "--sequences 1 --length 8 --threads 1 -o " +
                                  dir.file("st"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  write_npy(dir.file("ids.npy"), testing::i64({1, 513}, std::vector<int64_t>(513, 1)));
  const auto r = testing::run_cli("run " + dir.file("st/model.onnx") +
                                  " --input input_ids=" + dir.file("ids.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tailor: error: input 'input_ids': 513 positions (past + new tokens) "
                          "pass the context length 512"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("internal"), std::string::npos) << r.output;
}

// plan.json held the solver's seconds, profile.json every candidate's
// encode_seconds and weights.safetensors the plan (seconds included).
TEST(CompressOutput, ArtifactsAreByteIdenticalOnOneAndTwoThreads) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  for (const char* threads : {"1", "2"}) {
    const std::string out = dir.file(std::string("t") + threads);
    const auto r = testing::run_cli("compress " + kCls + " --budget 50% --no-cache --inputs 1 " +
                                    "--threads " + threads + " -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto p = testing::run_cli("profile " + kCls + " --threads " + threads + " -o " + out +
                                    "/profile.json");
    ASSERT_EQ(p.exit_code, 0) << p.output;
  }
  for (const char* f : {"model.onnx", "weights.safetensors", "plan.json", "profile.json"})
    EXPECT_TRUE(read_file(dir.file("t1/") + f) == read_file(dir.file("t2/") + f)) << f;
}

// Run from another folder, compress used to look for tests/fixtures/ocr in
// the working folder and silently verify on random inputs instead.
TEST(CompressOutput, FindsTheOcrFixturesFromAnyWorkingFolder) {
  const std::string rec = testing::model_path("ch_PP-OCRv4_rec_infer.onnx");
  if (!fs::exists(rec) || !fs::exists(testing::model_path("ppocr_keys_v1.txt")))
    GTEST_SKIP() << rec << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  const fs::path here = fs::current_path();
  fs::current_path(dir.path());
  const auto r = testing::run_cli(
      "compress " + rec +
      " --budget 60% --schemes dense,int8 --objective numel --no-cache --threads 2 -o out");
  fs::current_path(here);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verification (19 inputs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("OCR character accuracy: original"), std::string::npos) << r.output;
}

// --ocr-lines /nonexistent used to exit 0 after verifying on random inputs.
TEST(CompressOutput, AnOcrFixtureFolderOrKeyFileThatIsNotThereIsAOneLineError) {
  TempDir dir;
  const std::string model = dir.file("m.onnx"), missing = dir.file("nonexistent");
  testing::write_bytes(model, "not read");
  for (const std::string opt : {"--ocr-lines", "--ocr-keys"}) {
    const auto r = testing::run_cli("compress " + model + " --budget 50% " + opt + " " + missing +
                                    " -o " + dir.file("out"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.rfind("tailor: error: " + missing + ": " + opt, 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(fs::exists(dir.file("out")));
  }
}

}  // namespace
}  // namespace tailor
