// Environment handed to the child by `ophook run`, and where the preload library is found.
#include <gtest/gtest.h>

#include "child_env.hpp"
#include "library_locator.hpp"

namespace ophook::cli {
namespace {

TEST(CliChildEnv, OnlyGivenSettingsBecomeVariables) {
  HookSettings settings;
  settings.mode = "stats";
  settings.max_bytes = "64M";
  const auto vars = hook_variables(settings);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0], std::make_pair(std::string("OPHOOK_MODE"), std::string("stats")));
  EXPECT_EQ(vars[1], std::make_pair(std::string("OPHOOK_MAX_BYTES"), std::string("64M")));
}

TEST(CliChildEnv, LibraryIsPrependedToLdPreload) {
  EXPECT_EQ(prepend_preload("/x/libophook.so", ""), "/x/libophook.so");
  EXPECT_EQ(prepend_preload("/x/libophook.so", "/a.so /b.so:/c.so"),
            "/x/libophook.so:/a.so:/b.so:/c.so");
  EXPECT_EQ(prepend_preload("/x/libophook.so", "/a.so:/x/libophook.so"), "/x/libophook.so:/a.so");
}

TEST(CliChildEnv, Validators) {
  EXPECT_EQ(check_levels("numpy,torch_dispatch"), "");
  EXPECT_NE(check_levels("numpy,cuda"), "");
  EXPECT_NE(check_levels(""), "");
  EXPECT_EQ(check_regex("^numpy\\.(add|mul)$"), "");
  EXPECT_NE(check_regex("(unclosed"), "");
  EXPECT_EQ(check_byte_size("512M"), "");
  EXPECT_NE(check_byte_size("lots"), "");
}

TEST(CliChildEnv, LibraryLiesBesideTheExecutable) {
  EXPECT_EQ(preload_library_candidate("/venv/site-packages/ophook/ophook"),
            "/venv/site-packages/ophook/libophook.so");
  EXPECT_FALSE(find_preload_library("/nonexistent/dir/ophook").has_value());
}

}  // namespace
}  // namespace ophook::cli
