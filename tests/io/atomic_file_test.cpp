#include "tailor/io/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include <sys/stat.h>

#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor {
namespace {

size_t files_in(const std::filesystem::path& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

TEST(AtomicFile, FailureMidWriteKeepsThePreviousFileAndLeavesNoTemporary) {
  testing::TempDir dir;
  const std::string p = dir.file("out.bin");
  write_file_atomic(p, std::string_view("old contents"));
  EXPECT_THROW(write_file_atomic(p,
                                 [](std::ostream& os) {
                                   os << std::string(1 << 20, 'x');  // half a file...
                                   throw std::runtime_error("writer failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(read_file(p), "old contents");
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(AtomicFile, WritesAndReplaces) {
  testing::TempDir dir;
  const std::string p = dir.file("out.bin");
  write_file_atomic(p, std::string_view("first"));
  write_file_atomic(p, std::string_view("second"));
  EXPECT_EQ(read_file(p), "second");
  EXPECT_EQ(files_in(dir.path()), 1u);
}

TEST(AtomicFile, UnwritableFolderIsAnErrorNamingThePath) {
  testing::expect_error_naming(
      [] { write_file_atomic("/nonexistent-folder/out.bin", std::string_view("x")); },
      "/nonexistent-folder/out.bin", "cannot create temporary file");
}

TEST(AtomicFile, ReadFileRefusesFifosWithoutBlocking) {
  testing::TempDir dir;
  const std::string p = dir.file("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  testing::expect_error_naming([&] { read_file(p); }, p, "not a regular file");
}

}  // namespace
}  // namespace tailor
