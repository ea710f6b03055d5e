#include "tailor/core/text.h"

#include <gtest/gtest.h>

#include <limits>

#include "tailor/core/error.h"

namespace tailor {
namespace {

TEST(Text, WithCommas) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(2690312), "2,690,312");
  EXPECT_EQ(with_commas(-1234567), "-1,234,567");
  EXPECT_EQ(with_commas(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

TEST(Text, EscapeControlAndCut) {
  EXPECT_EQ(escape_control("a\nb\x1b[2J\x7f"), "a\\x0ab\\x1b[2J\\x7f");
  EXPECT_EQ(escape_control("abcdef", 3), "abc...");
  EXPECT_EQ(escape_control("abc", 3), "abc");
}

TEST(Text, ErrorMessagesAreOneBoundedLine) {
  const Error e("file\nname", std::string(2000, 'x') + "\n");
  const std::string what = e.what();
  EXPECT_EQ(what.find('\n'), std::string::npos);
  EXPECT_EQ(what.rfind("file\\x0aname: ", 0), 0u);
  EXPECT_LT(what.size(), 600u);  // 512 bytes of message, "...", the source
}

}  // namespace
}  // namespace tailor
