#include "lines/line_buffer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "lines/json_line.hpp"

namespace ophook::core {
namespace {

// Pieces of every length up to well past the first allocation: the text is what std::string
// makes of the same appends, across every growth.
TEST(LineBuffer, KeepsTheTextAcrossGrowth) {
  LineBuffer buffer;
  std::string expected;
  for (std::size_t n = 0; n < 300; ++n) {
    const std::string piece(n, static_cast<char>('a' + n % 26));
    buffer.append(piece);
    expected += piece;
    buffer.push_back('|');
    expected += '|';
  }
  ASSERT_GT(expected.size(), 40'000u);
  EXPECT_EQ(buffer.view(), expected);
  buffer.clear();
  EXPECT_TRUE(buffer.view().empty());
  buffer.append("after clear");
  EXPECT_EQ(buffer.view(), "after clear");
}

TEST(LineBuffer, JsonNumbersAndStrings) {
  LineBuffer buffer;
  JsonLine json(buffer);
  json.real(-2.2250738585072014e-308);
  json.sep();
  json.real(0.1);
  json.sep();
  json.integer(-9223372036854775807 - 1);
  json.sep();
  json.string("tab\there \"quoted\" \x01");
  EXPECT_EQ(buffer.view(),
            R"(-2.2250738585072014e-308,0.1,-9223372036854775808,"tab\there \"quoted\" \u0001")");
}

}  // namespace
}  // namespace ophook::core
