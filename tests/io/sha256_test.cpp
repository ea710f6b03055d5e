// SHA-256 against the FIPS 180-2 example digests and Python's hashlib.
#include "tailor/io/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;

TEST(Sha256, FipsExamples) {
  // FIPS 180-2, Appendix B.1 and B.2.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, FileAcrossChunks) {
  // 3,000,000 bytes span three 1 MiB reads; digest from Python's
  // hashlib.sha256(b'a' * 3000000).
  TempDir dir;
  testing::write_bytes(dir.file("a.bin"), std::string(3000000, 'a'));
  EXPECT_EQ(sha256_file(dir.file("a.bin")),
            "2a152c894398719c0570f83fac34ac03a0f6e8e474b995c2403aa5434f7b9dd4");
  testing::write_bytes(dir.file("empty"), "");
  EXPECT_EQ(sha256_file(dir.file("empty")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, MissingFileAndFolderAreErrors) {
  TempDir dir;
  testing::expect_error_naming([&] { sha256_file(dir.file("nope")); }, dir.file("nope"),
                               "no such file");
  testing::expect_error_naming([&] { sha256_file(dir.path().string()); }, dir.path().string(),
                               "not a regular file");
}

}  // namespace
}  // namespace tailor
