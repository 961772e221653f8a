// Regression tests for what the libFuzzer harnesses (tests/fuzz) found. Their inputs are also in
// tests/fuzz/corpus/, replayed by every fuzz run.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "array_diff.hpp"
#include "ophook/config.hpp"

namespace ophook {
namespace {

// fuzz_config: a non-UTF-8 byte in OPHOOK_OUTPUT (a Latin-1 directory name) made json::dump throw
// type_error 316 when summary.json was written; the text is kept with U+FFFD in its place.
TEST(FuzzFindings, NonUtf8SettingsStillSerialiseToJson) {
  const std::map<std::string, std::string, std::less<>> env{
      {"OPHOOK_OUTPUT", "/tmp/caf\xe9"}, {"OPHOOK_INCLUDE", "numpy\x8a"}};
  const core::ConfigResult result = core::parse_config([&](std::string_view name) {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  EXPECT_EQ(result.config.output, "/tmp/caf\xe9");  // the directory itself is used as given
  const nlohmann::json json = core::config_to_json(result.config);
  std::string text;
  ASSERT_NO_THROW(text = json.dump());
  EXPECT_EQ(json.at("output").get<std::string>(), "/tmp/caf\xef\xbf\xbd");
  EXPECT_EQ(json.at("include").get<std::string>(), "numpy\xef\xbf\xbd");
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
