#include "ophook/config/config_json.hpp"
#include "ophook/config/settings.hpp"
#include "support/parse_settings.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <set>

namespace ophook::core {
namespace {

using Env = test::SettingsMap;
using test::parse_settings;

// Parses one variable and expects exactly one error that names it, the value and `accepted`.
void expect_rejected(const std::string& variable, const std::string& value,
                     const std::string& accepted_part) {
  SCOPED_TRACE(variable + "=" + value);
  const ConfigResult r = parse_settings({{variable, value}});
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
  const ConfigResult r = parse_settings({});
  EXPECT_TRUE(r.errors.empty());
  const Config& c = r.config;
  EXPECT_EQ(c.output, "np_op_dumps");
  EXPECT_EQ(c.output, kDefaultOutput);
  EXPECT_EQ(c.mode, Mode::Dump);
  EXPECT_EQ(levels_to_string(c.levels), "numpy,torch_function,collective");
  EXPECT_EQ(c.replicas, 0u);
  EXPECT_EQ(c.include, "");
  EXPECT_EQ(c.exclude, "");
  EXPECT_FALSE(c.nested);
  EXPECT_TRUE(c.steps.all());
  EXPECT_TRUE(c.ranks.all());
  EXPECT_EQ(c.modules, "");
  EXPECT_FALSE(c.accessors);
  EXPECT_FALSE(c.imports);
  EXPECT_EQ(c.ring_bytes, 0u);
  EXPECT_EQ(c.dump_include, "");
  EXPECT_EQ(c.tensor_copy, TensorCopy::Auto);
  EXPECT_EQ(c.max_bytes, 1ull << 30);
  EXPECT_EQ(c.queue_bytes, 256ull << 20);
  EXPECT_TRUE(c.stack);
  EXPECT_EQ(c.nan, NanPolicy::Off);
  EXPECT_EQ(c.compile, CompilePolicy::Eager);
  EXPECT_EQ(c.overrides, "");
  EXPECT_EQ(c.log_level, LogLevel::Info);
  EXPECT_FALSE(c.strict);
  EXPECT_FALSE(c.disable);
}

TEST(Config, EmptyStringCountsAsUnset) {
  const ConfigResult r = parse_settings({{"OPHOOK_MODE", ""}, {"OPHOOK_LEVELS", ""},
                                {"OPHOOK_OUTPUT", ""}, {"OPHOOK_MAX_BYTES", ""}});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.mode, Mode::Dump);
  EXPECT_EQ(r.config.output, "np_op_dumps");
}

TEST(Config, EveryVariableParsed) {
  const ConfigResult r = parse_settings({{"OPHOOK_OUTPUT", "/tmp/out dir"},
                                {"OPHOOK_MODE", "stats"},
                                {"OPHOOK_LEVELS", "torch_dispatch,numpy"},
                                {"OPHOOK_INCLUDE", "^numpy\\.(add|mul)"},
                                {"OPHOOK_EXCLUDE", "reduce$"},
                                {"OPHOOK_NESTED", "1"},
                                {"OPHOOK_STEPS", "10, 0-2"},
                                {"OPHOOK_RANKS", "1"},
                                {"OPHOOK_MODULES", "layers\\.1\\b"},
                                {"OPHOOK_ACCESSORS", "yes"},
                                {"OPHOOK_IMPORTS", "on"},
                                {"OPHOOK_RING_BYTES", "64M"},
                                {"OPHOOK_DUMP_INCLUDE", "^aten\\.mm"},
                                {"OPHOOK_TENSOR_COPY", "Torch"},
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
  EXPECT_FALSE(c.levels.collective);  // a list without it records no collective
  EXPECT_EQ(c.include, "^numpy\\.(add|mul)");
  EXPECT_EQ(c.exclude, "reduce$");
  EXPECT_TRUE(c.nested);
  EXPECT_EQ(c.steps.to_string(), "0-2,10");
  EXPECT_EQ(c.ranks.to_string(), "1");
  EXPECT_EQ(c.modules, "layers\\.1\\b");
  EXPECT_TRUE(c.accessors);
  EXPECT_TRUE(c.imports);
  EXPECT_EQ(c.ring_bytes, 64ull << 20);
  EXPECT_EQ(c.dump_include, "^aten\\.mm");
  EXPECT_EQ(c.tensor_copy, TensorCopy::Torch);
  EXPECT_EQ(c.max_bytes, 512ull << 20);
  EXPECT_EQ(c.queue_bytes, 64ull << 10);
  EXPECT_FALSE(c.stack);
  EXPECT_EQ(c.nan, NanPolicy::Raise);
  EXPECT_EQ(c.compile, CompilePolicy::Ignore);
  EXPECT_EQ(c.overrides, "rules.py");
  EXPECT_EQ(c.log_level, LogLevel::Debug);
  EXPECT_TRUE(c.strict);
  EXPECT_TRUE(c.disable);
}

TEST(Config, KeywordsAreCaseInsensitiveAndTrimmed) {
  const ConfigResult r = parse_settings({{"OPHOOK_MODE", " Trace "},
                                {"OPHOOK_NAN", "WARN"},
                                {"OPHOOK_LOG_LEVEL", "Off"},
                                {"OPHOOK_LEVELS", " numpy , Torch_Function ,"}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.mode, Mode::Trace);
  EXPECT_EQ(r.config.nan, NanPolicy::Warn);
  EXPECT_EQ(r.config.log_level, LogLevel::Off);
  EXPECT_EQ(levels_to_string(r.config.levels), "numpy,torch_function");
}

TEST(Config, AllLogLevels) {
  const std::pair<const char*, LogLevel> cases[] = {
      {"trace", LogLevel::Trace}, {"debug", LogLevel::Debug}, {"info", LogLevel::Info},
      {"warn", LogLevel::Warn},   {"error", LogLevel::Error}, {"off", LogLevel::Off}};
  for (const auto& [text, level] : cases) {
    const ConfigResult r = parse_settings({{"OPHOOK_LOG_LEVEL", text}});
    ASSERT_TRUE(r.errors.empty()) << text;
    EXPECT_EQ(r.config.log_level, level) << text;
    EXPECT_EQ(config_to_json(r.config)["log_level"], text);
  }
}

TEST(Config, BooleanSpellings) {
  for (const char* yes : {"1", "true", "TRUE", "yes", "On"}) {
    EXPECT_TRUE(parse_settings({{"OPHOOK_NESTED", yes}}).config.nested) << yes;
  }
  for (const char* no : {"0", "false", "No", "off"}) {
    EXPECT_FALSE(parse_settings({{"OPHOOK_STACK", no}}).config.stack) << no;
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
  expect_rejected("OPHOOK_COMPILE", "compiled", "eager, ignore, record");
  expect_rejected("OPHOOK_LOG_LEVEL", "verbose", "trace, debug, info, warn, error, off");
  expect_rejected("OPHOOK_STRICT", "strict", "0, 1");
  expect_rejected("OPHOOK_DISABLE", "disabled", "0, 1");
  expect_rejected("OPHOOK_STEPS", "3-1", "0-2,10");
  expect_rejected("OPHOOK_STEPS", "1,,2", "0-2,10");
  expect_rejected("OPHOOK_RANKS", "-1", "0-2,10");
  expect_rejected("OPHOOK_RANKS", "one", "0-2,10");
  expect_rejected("OPHOOK_MODULES", "(attn", "ECMAScript");
  expect_rejected("OPHOOK_ACCESSORS", "all", "0, 1");
  expect_rejected("OPHOOK_IMPORTS", "2", "0, 1");
  expect_rejected("OPHOOK_RING_BYTES", "big", "K/M/G/T");
  expect_rejected("OPHOOK_DUMP_INCLUDE", "[mm", "ECMAScript");
  expect_rejected("OPHOOK_TENSOR_COPY", "cuda", "auto, torch");
}

TEST(Config, RangeLists) {
  const auto parsed = parse_ranges("100-, 3, 0-2,4,7-8");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->to_string(), "0-4,7-8,100-");
  for (std::uint64_t in : {0, 2, 4, 7, 8, 100, 1000000}) EXPECT_TRUE(parsed->contains(in)) << in;
  for (std::uint64_t out : {5, 6, 9, 99}) EXPECT_FALSE(parsed->contains(out)) << out;
  EXPECT_TRUE(RangeSet{}.contains(12345));
  EXPECT_EQ(parse_ranges("5")->to_string(), "5");
  EXPECT_EQ(parse_ranges("0-")->to_string(), "0-");
  for (const char* bad : {"", ",", "a", "1-a", "-3", "2-1", "1.5", "1;2", "18446744073709551616"}) {
    EXPECT_FALSE(parse_ranges(bad)) << bad;
  }
}

TEST(Config, NanHuntKeepsArraysInARingUnlessTheModeOrRingIsGiven) {
  EXPECT_EQ(parse_settings({{"OPHOOK_NAN", "warn"}}).config.ring_bytes, kNanHuntRingBytes);
  EXPECT_EQ(parse_settings({{"OPHOOK_NAN", "raise"}, {"OPHOOK_MODE", "dump"}}).config.ring_bytes, 0u);
  EXPECT_EQ(parse_settings({{"OPHOOK_NAN", "warn"}, {"OPHOOK_RING_BYTES", "0"}}).config.ring_bytes, 0u);
  EXPECT_EQ(parse_settings({{"OPHOOK_NAN", "warn"}, {"OPHOOK_RING_BYTES", "1M"}}).config.ring_bytes, 1ull << 20);
  EXPECT_EQ(parse_settings({{"OPHOOK_NAN", "off"}}).config.ring_bytes, 0u);
}

TEST(Config, SettingsTableNamesEachVariableOnce) {
  std::set<std::string> variables, options;
  for (const auto& setting : settings()) {
    EXPECT_TRUE(variables.insert(setting.variable()).second) << setting.variable();
    EXPECT_TRUE(options.insert(setting.option()).second) << setting.option();
    EXPECT_FALSE(setting.help.empty() || setting.values.empty() || setting.default_text.empty()) << setting.name;
    // Every row parses its own variable: a value that variable rejects is reported under its name.
    const auto problem = setting_problem(setting, "\x01(");
    if (!problem.empty()) {
      EXPECT_EQ(problem.rfind(setting.variable() + "=", 0), 0u) << problem;
    }
  }
  EXPECT_EQ(settings()[0].option(), "--output");
  const auto ring = std::find_if(settings().begin(), settings().end(), [](auto& s) { return s.name == "RING_BYTES"; });
  ASSERT_NE(ring, settings().end());
  EXPECT_EQ(ring->option(), "--ring-bytes");
  EXPECT_EQ(ring->keyword(), "ring_bytes");
  EXPECT_EQ(setting_problem(*ring, "256M"), "");
}

TEST(Config, MessageFormat) {
  const ConfigError e{"OPHOOK_MODE", "fast", "trace, stats, dump", {}};
  EXPECT_EQ(e.message(), "OPHOOK_MODE='fast' is not valid (accepted: trace, stats, dump)");
}

TEST(Config, SeveralErrorsReportedTogetherOthersStillApplied) {
  const ConfigResult r =
      parse_settings({{"OPHOOK_MODE", "x"}, {"OPHOOK_NAN", "y"}, {"OPHOOK_STACK", "0"}});
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].variable, "OPHOOK_MODE");
  EXPECT_EQ(r.errors[1].variable, "OPHOOK_NAN");
  EXPECT_FALSE(r.config.stack);
  EXPECT_EQ(r.config.mode, Mode::Dump);
}

TEST(Config, ZeroMaxBytesIsAllowed) {
  const ConfigResult r = parse_settings({{"OPHOOK_MAX_BYTES", "0"}});
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

TEST(Config, ReplicasAndTheCollectiveLevel) {
  auto r = parse_settings({{"OPHOOK_REPLICAS", "100"}, {"OPHOOK_LEVELS", "torch_function,collective"}});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.config.replicas, 100u);
  EXPECT_TRUE(r.config.levels.collective && r.config.levels.torch_function && !r.config.levels.numpy);
  EXPECT_FALSE(r.config.records_ops);  // the check alone records no op call, as the monitor alone
  EXPECT_TRUE(parse_settings({{"OPHOOK_REPLICAS", "1"}, {"OPHOOK_MODE", "trace"}}).config.records_ops);
  for (const char* bad : {"0", "-1", "two", "1000001"}) {
    r = parse_settings({{"OPHOOK_REPLICAS", bad}});
    ASSERT_EQ(r.errors.size(), 1u) << bad;
    EXPECT_EQ(r.errors[0].message(),
              std::string("OPHOOK_REPLICAS='") + bad + "' is not valid (accepted: a whole number from 1 to 1000000)");
  }
}

TEST(Config, TheMonitorAloneKeepsCompiledCodeCompiledUnlessTheCompilePolicyIsGiven) {
  auto alone = parse_settings({{"OPHOOK_MONITOR", "1"}}).config;
  EXPECT_FALSE(alone.records_ops);
  EXPECT_EQ(alone.compile, CompilePolicy::Ignore);
  EXPECT_EQ(parse_settings({{"OPHOOK_MONITOR", "1"}, {"OPHOOK_COMPILE", "eager"}}).config.compile, CompilePolicy::Eager);
  EXPECT_EQ(parse_settings({{"OPHOOK_MONITOR", "1"}, {"OPHOOK_MODE", "stats"}}).config.compile, CompilePolicy::Eager);
  EXPECT_EQ(parse_settings({}).config.compile, CompilePolicy::Eager);
}

TEST(Config, StringsAndJson) {
  EXPECT_EQ(to_string(Mode::Trace), "trace");
  EXPECT_EQ(to_string(Mode::Stats), "stats");
  EXPECT_EQ(to_string(Mode::Dump), "dump");
  EXPECT_EQ(to_string(NanPolicy::Raise), "raise");
  EXPECT_EQ(to_string(CompilePolicy::Ignore), "ignore");
  EXPECT_EQ(levels_to_string({true, true, true, true}), "numpy,torch_function,torch_dispatch,collective");
  EXPECT_EQ(levels_to_string({false, false, true, false}), "torch_dispatch");

  Config c;
  c.levels = {false, true, true, false};
  c.log_level = LogLevel::Warn;
  c.overrides = "o.py";
  const nlohmann::json j = config_to_json(c);
  const nlohmann::json expected = {
      {"output", "np_op_dumps"}, {"mode", "dump"},
      {"levels", {"torch_function", "torch_dispatch"}},
      {"include", ""},           {"exclude", ""},
      {"nested", false},         {"steps", ""},
      {"ranks", ""},             {"modules", ""},
      {"accessors", false},      {"imports", false},
      {"ring_bytes", 0},         {"ring_steps", 0},
      {"dump_include", ""},
      {"tensor_copy", "auto"},   {"max_bytes", 1073741824},
      {"queue_bytes", 268435456}, {"stack", true},
      {"nan", "off"},            {"compile", "eager"},
      {"overrides", "o.py"},     {"log_level", "warn"},
      {"monitor", ""},           {"monitor_trigger", nlohmann::json::array()},
      {"monitor_window", 50},       {"replicas", 0},
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

TEST(Config, MisspelledVariableNamesTheSettingItResembles) {
  const Settings given = {{"OPHOOK_OUTPUT_DIR", "runs"}, {"OPHOOK_LEVEL", "numpy"}, {"OPHOOK_NANS", "warn"},
                          {"OPHOOK_MDOE", "stats"},      {"OPHOOK_RING", "1M"},     {"OPHOOK_MODE", "trace"}};
  const ConfigResult r = parse_config(given);
  std::map<std::string, std::string> resembles;
  for (const auto& e : r.errors) resembles[e.variable] = e.resembles;
  const std::map<std::string, std::string> expected = {{"OPHOOK_OUTPUT_DIR", "OPHOOK_OUTPUT"},
                                                       {"OPHOOK_LEVEL", "OPHOOK_LEVELS"},
                                                       {"OPHOOK_NANS", "OPHOOK_NAN"},
                                                       {"OPHOOK_MDOE", "OPHOOK_MODE"},
                                                       {"OPHOOK_RING", "OPHOOK_RING_BYTES"}};
  EXPECT_EQ(resembles, expected);
  EXPECT_EQ(r.config.mode, Mode::Trace);  // the real settings still apply
  EXPECT_EQ(r.errors.front().message(), "OPHOOK_LEVEL='numpy' is not an ophook setting (did you mean OPHOOK_LEVELS?)");
}

TEST(Config, VariablesResemblingNoSettingAreLeftAlone) {
  // What ophook exports to its children, a test harness's own, and unset (empty) ones.
  const Settings given = {{"OPHOOK_ROOT_PID", "12"},   {"OPHOOK_ROOT_OUTPUT", "/tmp/x"}, {"OPHOOK_HELD_RANK", "1"},
                          {"OPHOOK_BUILD_DIR", "b"},   {"OPHOOK_SOURCE_DIR", "s"},       {"OPHOOK_TEST_NO_LINKS", "1"},
                          {"OPHOOK_OUTPUT_DIR", ""},   {"OPHOOK_DUMP_INCLUDE", "mm"},    {"OPHOOK_LOG_LEVEL", "warn"}};
  EXPECT_TRUE(parse_config(given).errors.empty());
}

TEST(Config, TestSettingsParseLikeTheOthersAndStayOutOfTheUsersTable) {
  const ConfigResult r = parse_settings({{"OPHOOK_TEST_FAKE_DEVICE_DRIVER", "1"},
                                {"OPHOOK_TEST_FAKE_DEVICE_IDLE", "yes"},
                                {"OPHOOK_TEST_FAKE_DEVICE_LAG", "200"},
                                {"OPHOOK_TEST_STAGING_BYTES", "64K"},
                                {"OPHOOK_TEST_FILE_HELPERS", "0"},
                                {"OPHOOK_TEST_NO_LINKS", "1"}});
  EXPECT_TRUE(r.errors.empty());
  const TestSettings& t = r.config.test;
  EXPECT_TRUE(t.fake_device_driver && t.fake_device_idle && t.no_links);
  EXPECT_EQ(t.fake_device_lag, 200u);
  EXPECT_EQ(t.staging_bytes, 64u << 10);
  EXPECT_EQ(t.file_helpers, 0u);
  EXPECT_EQ(Config{}.test.file_helpers, TestSettings::kAutomatic);
  // Checked as strictly as a user's setting, under its own name.
  expect_rejected("OPHOOK_TEST_FILE_HELPERS", "9", "0 to 7");
  expect_rejected("OPHOOK_TEST_FAKE_DEVICE_LAG", "0", "from 1");
  expect_rejected("OPHOOK_TEST_STAGING_BYTES", "1K", "at least 4K");
  // Never a user's option, keyword or row of --help and the README.
  for (const auto& setting : settings()) EXPECT_FALSE(setting.name.starts_with("TEST_")) << setting.name;
  for (const auto& setting : test_settings()) EXPECT_TRUE(setting.name.starts_with("TEST_")) << setting.name;
}

TEST(Config, MisspelledVariableInTheEnvironment) {
  ::setenv("OPHOOK_QUEUE_BYTE", "64M", 1);
  const ConfigResult r = parse_config_from_environment();
  ::unsetenv("OPHOOK_QUEUE_BYTE");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message(), "OPHOOK_QUEUE_BYTE='64M' is not an ophook setting (did you mean OPHOOK_QUEUE_BYTES?)");
}

}  // namespace
}  // namespace ophook::core
