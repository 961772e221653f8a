#include "ophook/config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>

namespace ophook::core {
namespace {

using Env = std::map<std::string, std::string, std::less<>>;

ConfigResult parse(const Env& env) {
  return parse_config([&env](std::string_view name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

// Parses one variable and expects exactly one error that names it, the value and `accepted`.
void expect_rejected(const std::string& variable, const std::string& value,
                     const std::string& accepted_part) {
  SCOPED_TRACE(variable + "=" + value);
  const ConfigResult r = parse({{variable, value}});
  ASSERT_EQ(r.errors.size(), 1u);
  const ConfigError& e = r.errors[0];
  EXPECT_EQ(e.variable, variable);
  EXPECT_EQ(e.value, value);
  EXPECT_NE(e.accepted.find(accepted_part), std::string::npos) << e.accepted;
  const std::string message = e.message();
  EXPECT_NE(message.find(variable), std::string::npos) << message;
  EXPECT_NE(message.find("'" + value + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(accepted_part), std::string::npos) << message;
  // The rejected setting keeps its default.
  EXPECT_EQ(config_to_json(r.config), config_to_json(Config{}));
}

TEST(Config, DefaultsWhenNothingIsSet) {
  const ConfigResult r = parse({});
  EXPECT_TRUE(r.errors.empty());
  const Config& c = r.config;
  EXPECT_EQ(c.output, "np_op_dumps");
  EXPECT_EQ(c.mode, Mode::Dump);
  EXPECT_EQ(levels_to_string(c.levels), "numpy,torch_function");
  EXPECT_EQ(c.include, "");
  EXPECT_EQ(c.exclude, "");
  EXPECT_FALSE(c.nested);
  EXPECT_EQ(c.max_bytes, 1ull << 30);
  EXPECT_EQ(c.queue_bytes, 256ull << 20);
  EXPECT_TRUE(c.stack);
  EXPECT_EQ(c.nan, NanPolicy::Off);
  EXPECT_EQ(c.compile, CompilePolicy::Eager);
  EXPECT_EQ(c.overrides, "");
  EXPECT_EQ(c.log_level, spdlog::level::info);
  EXPECT_FALSE(c.strict);
  EXPECT_FALSE(c.disable);
}

TEST(Config, EmptyStringCountsAsUnset) {
  const ConfigResult r = parse({{"OPHOOK_MODE", ""}, {"OPHOOK_LEVELS", ""},
                                {"OPHOOK_OUTPUT", ""}, {"OPHOOK_MAX_BYTES", ""}});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.mode, Mode::Dump);
  EXPECT_EQ(r.config.output, "np_op_dumps");
}

TEST(Config, EveryVariableParsed) {
  const ConfigResult r = parse({{"OPHOOK_OUTPUT", "/tmp/out dir"},
                                {"OPHOOK_MODE", "stats"},
                                {"OPHOOK_LEVELS", "torch_dispatch,numpy"},
                                {"OPHOOK_INCLUDE", "^numpy\\.(add|mul)"},
                                {"OPHOOK_EXCLUDE", "reduce$"},
                                {"OPHOOK_NESTED", "1"},
                                {"OPHOOK_MAX_BYTES", "512M"},
                                {"OPHOOK_QUEUE_BYTES", "64K"},
                                {"OPHOOK_STACK", "0"},
                                {"OPHOOK_NAN", "raise"},
                                {"OPHOOK_COMPILE", "ignore"},
                                {"OPHOOK_OVERRIDES", "rules.py"},
                                {"OPHOOK_LOG_LEVEL", "debug"},
                                {"OPHOOK_STRICT", "1"},
                                {"OPHOOK_DISABLE", "1"}});
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].message();
  const Config& c = r.config;
  EXPECT_EQ(c.output, "/tmp/out dir");
  EXPECT_EQ(c.mode, Mode::Stats);
  EXPECT_TRUE(c.levels.numpy);
  EXPECT_FALSE(c.levels.torch_function);
  EXPECT_TRUE(c.levels.torch_dispatch);
  EXPECT_EQ(c.include, "^numpy\\.(add|mul)");
  EXPECT_EQ(c.exclude, "reduce$");
  EXPECT_TRUE(c.nested);
  EXPECT_EQ(c.max_bytes, 512ull << 20);
  EXPECT_EQ(c.queue_bytes, 64ull << 10);
  EXPECT_FALSE(c.stack);
  EXPECT_EQ(c.nan, NanPolicy::Raise);
  EXPECT_EQ(c.compile, CompilePolicy::Ignore);
  EXPECT_EQ(c.overrides, "rules.py");
  EXPECT_EQ(c.log_level, spdlog::level::debug);
  EXPECT_TRUE(c.strict);
  EXPECT_TRUE(c.disable);
}

TEST(Config, KeywordsAreCaseInsensitiveAndTrimmed) {
  const ConfigResult r = parse({{"OPHOOK_MODE", " Trace "},
                                {"OPHOOK_NAN", "WARN"},
                                {"OPHOOK_LOG_LEVEL", "Off"},
                                {"OPHOOK_LEVELS", " numpy , Torch_Function ,"}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.mode, Mode::Trace);
  EXPECT_EQ(r.config.nan, NanPolicy::Warn);
  EXPECT_EQ(r.config.log_level, spdlog::level::off);
  EXPECT_EQ(levels_to_string(r.config.levels), "numpy,torch_function");
}

TEST(Config, AllLogLevels) {
  const std::pair<const char*, spdlog::level::level_enum> cases[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  for (const auto& [text, level] : cases) {
    const ConfigResult r = parse({{"OPHOOK_LOG_LEVEL", text}});
    ASSERT_TRUE(r.errors.empty()) << text;
    EXPECT_EQ(r.config.log_level, level) << text;
    EXPECT_EQ(config_to_json(r.config)["log_level"], text);
  }
}

TEST(Config, BooleanSpellings) {
  for (const char* yes : {"1", "true", "TRUE", "yes", "On"}) {
    EXPECT_TRUE(parse({{"OPHOOK_NESTED", yes}}).config.nested) << yes;
  }
  for (const char* no : {"0", "false", "No", "off"}) {
    EXPECT_FALSE(parse({{"OPHOOK_STACK", no}}).config.stack) << no;
  }
}

TEST(Config, BadValuesNameVariableValueAndAcceptedList) {
  expect_rejected("OPHOOK_MODE", "fast", "trace, stats, dump");
  expect_rejected("OPHOOK_LEVELS", "numpy,jax", "numpy, torch_function, torch_dispatch");
  expect_rejected("OPHOOK_LEVELS", ",", "non-empty");
  expect_rejected("OPHOOK_LEVELS", " , ,", "non-empty");
  expect_rejected("OPHOOK_INCLUDE", "numpy.(add", "ECMAScript");
  expect_rejected("OPHOOK_EXCLUDE", "[a-", "ECMAScript");
  expect_rejected("OPHOOK_NESTED", "2", "0, 1");
  expect_rejected("OPHOOK_MAX_BYTES", "-1", "K/M/G/T");
  expect_rejected("OPHOOK_MAX_BYTES", "1.5G", "K/M/G/T");
  expect_rejected("OPHOOK_MAX_BYTES", "lots", "K/M/G/T");
  expect_rejected("OPHOOK_QUEUE_BYTES", "1K", "at least 64K");
  expect_rejected("OPHOOK_QUEUE_BYTES", "65535", "at least 64K");
  expect_rejected("OPHOOK_QUEUE_BYTES", "99999999999999999999999", "at least 64K");
  expect_rejected("OPHOOK_STACK", "maybe", "0, 1");
  expect_rejected("OPHOOK_NAN", "ignore", "off, warn, raise");
  expect_rejected("OPHOOK_COMPILE", "compiled", "eager, ignore");
  expect_rejected("OPHOOK_LOG_LEVEL", "verbose", "trace, debug, info, warn, error, off");
  expect_rejected("OPHOOK_STRICT", "strict", "0, 1");
  expect_rejected("OPHOOK_DISABLE", "disabled", "0, 1");
}

TEST(Config, MessageFormat) {
  const ConfigError e{"OPHOOK_MODE", "fast", "trace, stats, dump"};
  EXPECT_EQ(e.message(), "OPHOOK_MODE='fast' is not valid (accepted: trace, stats, dump)");
}

TEST(Config, SeveralErrorsReportedTogetherOthersStillApplied) {
  const ConfigResult r =
      parse({{"OPHOOK_MODE", "x"}, {"OPHOOK_NAN", "y"}, {"OPHOOK_STACK", "0"}});
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].variable, "OPHOOK_MODE");
  EXPECT_EQ(r.errors[1].variable, "OPHOOK_NAN");
  EXPECT_FALSE(r.config.stack);
  EXPECT_EQ(r.config.mode, Mode::Dump);
}

TEST(Config, ZeroMaxBytesIsAllowed) {
  const ConfigResult r = parse({{"OPHOOK_MAX_BYTES", "0"}});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.max_bytes, 0u);
}

TEST(ByteSize, Accepted) {
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("64K"), 65536u);
  EXPECT_EQ(parse_byte_size("64k"), 65536u);
  EXPECT_EQ(parse_byte_size("64KB"), 65536u);
  EXPECT_EQ(parse_byte_size("64KiB"), 65536u);
  EXPECT_EQ(parse_byte_size("64kib"), 65536u);
  EXPECT_EQ(parse_byte_size("256M"), 256ull << 20);
  EXPECT_EQ(parse_byte_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("2T"), 2ull << 40);
  EXPECT_EQ(parse_byte_size("100B"), 100u);
  EXPECT_EQ(parse_byte_size(" 8 M "), 8ull << 20);
  EXPECT_EQ(parse_byte_size("18446744073709551615"), ~0ull);
  EXPECT_EQ(parse_byte_size("16777215T"), 16777215ull << 40);
}

TEST(ByteSize, Rejected) {
  for (const char* bad : {"", " ", "-1", "+5", "K", "1.5G", "1e9", "12Q", "1KK", "1 iB", "5iB",
                          "18446744073709551616", "16777216T", "99999999999999999999G", "0x10",
                          "1G1", "M5"}) {
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(Config, StringsAndJson) {
  EXPECT_EQ(to_string(Mode::Trace), "trace");
  EXPECT_EQ(to_string(Mode::Stats), "stats");
  EXPECT_EQ(to_string(Mode::Dump), "dump");
  EXPECT_EQ(to_string(NanPolicy::Raise), "raise");
  EXPECT_EQ(to_string(CompilePolicy::Ignore), "ignore");
  EXPECT_EQ(levels_to_string({true, true, true}), "numpy,torch_function,torch_dispatch");
  EXPECT_EQ(levels_to_string({false, false, true}), "torch_dispatch");

  Config c;
  c.levels = {false, true, true};
  c.log_level = spdlog::level::warn;
  c.overrides = "o.py";
  const nlohmann::json j = config_to_json(c);
  const nlohmann::json expected = {
      {"output", "np_op_dumps"}, {"mode", "dump"},
      {"levels", {"torch_function", "torch_dispatch"}},
      {"include", ""},           {"exclude", ""},
      {"nested", false},         {"max_bytes", 1073741824},
      {"queue_bytes", 268435456}, {"stack", true},
      {"nan", "off"},            {"compile", "eager"},
      {"overrides", "o.py"},     {"log_level", "warn"},
      {"strict", false},         {"disable", false}};
  EXPECT_EQ(j, expected) << j.dump();
}

TEST(Config, FromEnvironment) {
  ::setenv("OPHOOK_MODE", "trace", 1);
  ::setenv("OPHOOK_NAN", "bogus", 1);
  const ConfigResult r = parse_config_from_environment();
  ::unsetenv("OPHOOK_MODE");
  ::unsetenv("OPHOOK_NAN");
  EXPECT_EQ(r.config.mode, Mode::Trace);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].variable, "OPHOOK_NAN");
}

}  // namespace
}  // namespace ophook::core
