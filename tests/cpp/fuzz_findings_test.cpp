// Regression tests for what the libFuzzer harnesses (tests/fuzz) found. Their inputs are also in
// tests/fuzz/corpus/, replayed by every fuzz run.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "compare/values/array_diff.hpp"
#include "ophook/config/config_json.hpp"
#include "ophook/config/settings.hpp"
#include "support/parse_settings.hpp"

namespace ophook {
namespace {

using test::parse_settings;

// fuzz_config: a non-UTF-8 byte in OPHOOK_OUTPUT (a Latin-1 directory name) made json::dump throw
// type_error 316 when summary.json was written; the text is kept with U+FFFD in its place.
TEST(FuzzFindings, NonUtf8SettingsStillSerialiseToJson) {
  const core::ConfigResult result = parse_settings({{"OPHOOK_OUTPUT", "/tmp/caf\xe9"}, {"OPHOOK_INCLUDE", "numpy\x8a"}});
  EXPECT_EQ(result.config.output, "/tmp/caf\xe9");  // the directory itself is used as given
  const nlohmann::json json = core::config_to_json(result.config);
  std::string text;
  ASSERT_NO_THROW(text = json.dump());
  EXPECT_EQ(json.at("output").get<std::string>(), "/tmp/caf\xef\xbf\xbd");
  EXPECT_EQ(json.at("include").get<std::string>(), "numpy\xef\xbf\xbd");
}

// fuzz_config: OPHOOK_INCLUDE=^numpy\111…1 (a 30-digit back-reference) overflowed a long inside
// libstdc++'s regex compiler (UBSan: signed integer overflow). Such numbers are refused before
// std::regex sees them; ordinary back-references, counts and literal digits still pass.
TEST(FuzzFindings, OversizedRegexNumbersAreRefusedBeforeStdRegex) {
  const std::string digits(30, '1');
  const std::string oversized[] = {"^numpy\\" + digits + ".(adce$", "a{" + digits + "}", "a{1," + digits + "}"};
  for (const auto& pattern : oversized) {
    const core::ConfigResult result = parse_settings({{"OPHOOK_INCLUDE", pattern}});
    ASSERT_EQ(result.errors.size(), 1u) << pattern;
    EXPECT_NE(result.errors[0].message().find("more than 9 digits"), std::string::npos) << pattern;
    EXPECT_EQ(result.config.include, "") << pattern;
  }
  const std::string fine[] = {"(a)\\1", "a{2,3}", "^aten\\.add" + digits, "\\{" + digits, "x\\d{4}"};
  for (const auto& pattern : fine) {
    EXPECT_EQ(core::regex_problem(pattern), "") << pattern;
  }
}

// fuzz_npy: two empty arrays (shape (0, 5)) reached memcmp with a null pointer (UBSan: "null
// pointer passed as argument 2"). Empty buffers are equal without touching memory.
TEST(FuzzFindings, EmptyBuffersCompareEqualWithoutMemcmp) {
  const cli::BufferView empty{"<i2", 2, 0, {}};
  const cli::ArrayDiff diff = cli::compare_buffers(empty, empty, {});
  EXPECT_TRUE(diff.compared);
  EXPECT_TRUE(diff.bitwise_equal);
  EXPECT_TRUE(diff.within_tolerance());
}

}  // namespace
}  // namespace ophook
