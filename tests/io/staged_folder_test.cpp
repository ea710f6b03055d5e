// Interrupted runs: a process killed (SIGKILL) at the known points of
// StagedFolder::commit leaves the output either the previous folder or the
// new one, complete, and the next run clears the staging it left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tailor/io/atomic_file.h"
#include "tailor/io/llama2c.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

/// Runs `body` in a forked child; returns the child's pid after it ended and
/// expects it to have been killed by SIGKILL.
pid_t run_killed_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (...) {
    }
    ::_exit(0);  // not killed: the parent's expectation fails
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  return pid;
}

/// The pid of a process that has ended.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_folder(const std::string& out, const std::string& content) {
  StagedFolder s(out);
  write_file_atomic(s.file("a.txt"), "a " + content);
  write_file_atomic(s.file("b.txt"), "b " + content);
  s.commit();
}

void kill_at(std::string_view point) {
  set_staging_hook([point](std::string_view p) {
    if (p == point) ::raise(SIGKILL);
  });
}

TEST(StagedFolder, KilledBeforeTheSwapLeavesTheOldFolderAndTheNextRunClearsTheStaging) {
  TempDir dir;
  const std::string out = dir.file("out");
  write_folder(out, "old");
  const pid_t child = run_killed_child([&] {
    kill_at("staged");
    write_folder(out, "new");
  });
  const std::string staging = ".out.tmp-" + std::to_string(child);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{staging, "out"}));
  EXPECT_EQ(read_file(out + "/a.txt"), "a old");
  EXPECT_EQ(read_file(out + "/b.txt"), "b old");
  write_folder(out, "third");
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"out"}));
  EXPECT_EQ(read_file(out + "/b.txt"), "b third");
}

TEST(StagedFolder, KilledAfterTheSwapLeavesTheNewFolderCompleteAndTheNextRunClearsTheOld) {
  TempDir dir;
  const std::string out = dir.file("out");
  write_folder(out, "old");
  const pid_t child = run_killed_child([&] {
    kill_at("swapped");
    write_folder(out, "new");
  });
  const std::string staging = ".out.tmp-" + std::to_string(child);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{staging, "out"}));
  EXPECT_EQ(read_file(out + "/a.txt"), "a new");
  EXPECT_EQ(read_file(out + "/b.txt"), "b new");
  EXPECT_EQ(read_file(dir.file(staging) + "/a.txt"), "a old");  // the previous folder
  clear_stale_staging(out);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"out"}));
}

TEST(StagedFolder, StagingOfALiveProcessIsKeptAndDeadOnesOfEveryKindAreCleared) {
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getppid());
  for (const std::string& name : {".out.tmp-" + dead, ".out.old-" + dead, ".out.tmp-" + live,
                                  ".other.tmp-" + dead, ".out.tmp-x" + dead})
    fs::create_directory(dir.file(name));
  testing::write_bytes(dir.file(".out.tmp-" + dead + ".Ab12Cd"), "a killed write_file_atomic");
  testing::write_bytes(dir.file(".out.tmp-" + dead + "/weights"), std::string(1 << 20, 'w'));
  write_folder(out, "new");
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{".other.tmp-" + dead, ".out.tmp-" + live,
                                                           ".out.tmp-x" + dead, "out"}));
}

TEST(StagedFolder, WriteFileAtomicClearsTheTemporaryFileOfAKilledWrite) {
  TempDir dir;
  const std::string p = dir.file("plan.json");
  const pid_t child = run_killed_child([&] {
    write_file_atomic(p, [](std::ostream& os) {
      os << std::string(1 << 16, 'x') << std::flush;
      ::raise(SIGKILL);
    });
  });
  ASSERT_EQ(entries(dir.path()).size(), 1u);
  EXPECT_TRUE(entries(dir.path())[0].starts_with(".plan.json.tmp-" + std::to_string(child) + "."));
  write_file_atomic(p, std::string_view("{}"));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"plan.json"}));
}

TEST(StagedFolder, ASymlinkToAFolderIsFollowedAndKept) {
  TempDir dir;
  write_folder(dir.file("real"), "old");
  fs::create_directory_symlink(dir.file("real"), dir.file("link"));
  write_folder(dir.file("link"), "new");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_EQ(read_file(dir.file("real/a.txt")), "a new");
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"link", "real"}));
  fs::create_symlink(dir.file("real/a.txt"), dir.file("filelink"));
  testing::expect_error_naming([&] { StagedFolder s(dir.file("filelink")); }, dir.file("filelink"),
                               "symbolic link to something that is not a folder");
}

// convert into an existing folder used to rename its two files one at a time.
TEST(StagedFolder, ConvertKilledAtEitherPointLeavesBothFilesOldOrBothNew) {
  const std::string ckpt = testing::fixture_path("stories260K.bin");
  for (const char* point : {"staged", "swapped"}) {
    TempDir dir;
    const std::string out = dir.file("hf");
    fs::create_directory(out);
    testing::write_bytes(out + "/config.json", "old config");
    testing::write_bytes(out + "/model.safetensors", "old weights");
    const pid_t child = run_killed_child([&] {
      kill_at(point);
      convert_llama2c_to_hf(ckpt, out);
    });
    EXPECT_EQ(entries(dir.path()),
              (std::vector<std::string>{".hf.tmp-" + std::to_string(child), "hf"}))
        << point;
    if (std::string_view(point) == "staged") {
      EXPECT_EQ(read_file(out + "/config.json"), "old config");
      EXPECT_EQ(read_file(out + "/model.safetensors"), "old weights");
    } else {
      EXPECT_EQ(nlohmann::json::parse(read_file(out + "/config.json"))["hidden_size"], 64);
      EXPECT_GT(fs::file_size(out + "/model.safetensors"), 1000000u);
    }
    convert_llama2c_to_hf(ckpt, out);  // the next run
    EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"hf"})) << point;
    EXPECT_EQ(entries(out), (std::vector<std::string>{"config.json", "model.safetensors"}));
  }
}

// convert's folder was mkdtemp's, 0700, whatever the umask.
TEST(StagedFolder, ConvertCreatesItsFolderWithTheUmaskDefault) {
  TempDir dir;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const std::string out = dir.file("hf");
  convert_llama2c_to_hf(testing::fixture_path("stories260K.bin"), out);
  EXPECT_EQ(fs::status(out).permissions(), fs::perms(0777 & ~mask));
  EXPECT_EQ(fs::status(out + "/config.json").permissions(), fs::perms(0666 & ~mask));
}

TEST(StagedFolder, ConvertRefusesToReplaceAFolderOfOtherFiles) {
  TempDir dir;
  const std::string out = dir.file("hf");
  fs::create_directory(out);
  testing::write_bytes(out + "/tokenizer.json", "mine");
  testing::expect_error_naming(
      [&] { convert_llama2c_to_hf(testing::fixture_path("stories260K.bin"), out); }, out,
      "holds 'tokenizer.json'");
  EXPECT_EQ(entries(out), (std::vector<std::string>{"tokenizer.json"}));
}

}  // namespace
}  // namespace tailor
