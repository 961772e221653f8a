// Environment handed to the child by `ophook run`, and where the preload library is found.
#include <gtest/gtest.h>

#include "launch/child_env.hpp"
#include "launch/library_locator.hpp"
#include "launch/run_command.hpp"
#include "ophook/config/settings.hpp"

namespace ophook::cli {
namespace {

/// Parses `ophook run ARGS...` and returns the variables it would set; throws CLI::ParseError.
std::map<std::string, std::string> run_variables(std::vector<std::string> args) {
  CLI::App app;
  RunCommand run;
  run.attach(app);
  args.insert(args.begin(), "run");
  std::reverse(args.begin(), args.end());  // CLI11 takes them back to front
  app.parse(args);
  return run.variables();
}

TEST(CliChildEnv, OnlyGivenSettingsBecomeVariables) {
  const auto vars = run_variables({"--mode", "stats", "--max-bytes", "64M", "--", "python", "x.py"});
  const std::map<std::string, std::string> expected{{"OPHOOK_MODE", "stats"}, {"OPHOOK_MAX_BYTES", "64M"}};
  EXPECT_EQ(vars, expected);
}

TEST(CliChildEnv, EverySettingHasItsOption) {
  // A valid value of each setting; a setting added to the table needs one here.
  const std::map<std::string_view, std::string> examples{
      {"OUTPUT", "runs/a"},    {"MODE", "stats"},         {"LEVELS", "numpy,torch_dispatch"},
      {"INCLUDE", "^numpy"},   {"EXCLUDE", "reduce$"},    {"NESTED", "1"},
      {"STEPS", "0-2,10"},     {"RANKS", "0"},            {"MODULES", "layers\\.1\\b"},
      {"ACCESSORS", "1"},      {"IMPORTS", "1"},          {"RING_BYTES", "256M"},
      {"DUMP_INCLUDE", "mm"},  {"TENSOR_COPY", "torch"},  {"MAX_BYTES", "2G"},
      {"QUEUE_BYTES", "64M"},  {"STACK", "0"},            {"NAN", "raise"},
      {"COMPILE", "ignore"},   {"OVERRIDES", "rules.py"}, {"LOG_LEVEL", "debug"},
      {"STRICT", "1"},         {"DISABLE", "1"},          {"RING_STEPS", "2"},
      {"MONITOR", "modules"},  {"MONITOR_TRIGGER", "loss:6sigma"}, {"MONITOR_WINDOW", "20"},
      {"REPLICAS", "100"}};
  for (const auto& setting : core::settings()) {
    SCOPED_TRACE(setting.variable());
    ASSERT_TRUE(examples.contains(setting.name));
    const auto& value = examples.at(setting.name);
    const auto vars = run_variables({setting.option(), value, "--", "true"});
    ASSERT_EQ(vars.size(), 1u);
    EXPECT_EQ(vars.begin()->first, setting.variable());
    EXPECT_EQ(vars.begin()->second, value);
  }
  EXPECT_EQ(examples.size(), core::settings().size());
}

TEST(CliChildEnv, BadValuesAreRefusedWithTheSettingsMessage) {
  EXPECT_THROW(run_variables({"--nan", "sometimes", "--", "true"}), CLI::ValidationError);
  EXPECT_THROW(run_variables({"--levels", "numpy,cuda", "--", "true"}), CLI::ValidationError);
  EXPECT_THROW(run_variables({"--steps", "3-1", "--", "true"}), CLI::ValidationError);
  EXPECT_THROW(run_variables({"--ring-bytes", "lots", "--", "true"}), CLI::ValidationError);
  EXPECT_THROW(run_variables({"--modules", "(unclosed", "--", "true"}), CLI::ValidationError);
  try {
    run_variables({"--nan", "sometimes", "--", "true"});
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("OPHOOK_NAN='sometimes' is not valid (accepted: off, warn, raise)"),
              std::string::npos)
        << e.what();
  }
}

TEST(CliChildEnv, LibraryIsPrependedToLdPreload) {
  EXPECT_EQ(prepend_preload("/x/libophook.so", ""), "/x/libophook.so");
  EXPECT_EQ(prepend_preload("/x/libophook.so", "/a.so /b.so:/c.so"),
            "/x/libophook.so:/a.so:/b.so:/c.so");
  EXPECT_EQ(prepend_preload("/x/libophook.so", "/a.so:/x/libophook.so"), "/x/libophook.so:/a.so");
}

TEST(CliChildEnv, LibraryLiesBesideTheExecutable) {
  EXPECT_EQ(preload_library_candidate("/venv/site-packages/ophook/ophook"),
            "/venv/site-packages/ophook/libophook.so");
  EXPECT_FALSE(find_preload_library("/nonexistent/dir/ophook").has_value());
}

}  // namespace
}  // namespace ophook::cli
