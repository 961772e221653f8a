// How `ophook replay` and `compare --referee` find the Python that runs the replay package, the
// engine package, and an environment in which the engine records nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "replay/replay_interpreter.hpp"
#include "support/temp_files.hpp"

namespace ophook::cli {
namespace {

namespace fs = std::filesystem;

TEST(PythonEngine, PreloadLosesOnlyTheOphookLibrary) {
  EXPECT_EQ(preload_without_ophook("/a/build/libophook.so"), "");
  EXPECT_EQ(preload_without_ophook("/x/libasan.so:/a/build/libophook.so /y/libz.so"), "/x/libasan.so:/y/libz.so");
  EXPECT_EQ(preload_without_ophook("libophook.so.bak::/z/libophook_core.so"), "libophook.so.bak:/z/libophook_core.so");
}

TEST(PythonEngine, ChoosesTheGivenPythonThenTheRecordingOneThenPython3) {
  const fs::path dir = test::make_temp_dir("ophook-engine-");
  const fs::path run = dir / "run", other = dir / "other";
  fs::create_directories(run);
  fs::create_directories(other);
  EXPECT_EQ(choose_python("/opt/py/bin/python", {run}).python, "/opt/py/bin/python");
  EXPECT_EQ(choose_python("/opt/py/bin/python", {run}).origin, "--python");

  const auto fallback = choose_python("", {run});
  EXPECT_EQ(fallback.python, "python3");
  EXPECT_EQ(fallback.origin, "python3 in PATH");

  // A recording interpreter that no longer exists is passed over; an executable one is taken.
  std::ofstream(run / "summary.json") << R"({"versions": {"python_executable": "/nowhere/python"}})";
  const fs::path python = dir / "python";
  std::ofstream(python) << "#!/bin/sh\n";
  fs::permissions(python, fs::perms::owner_all);
  std::ofstream(other / "summary.json") << R"({"versions": {"python_executable": ")" << python.string() << "\"}}";
  const auto recorded = choose_python("", {run, other});
  EXPECT_EQ(recorded.python, python.string());
  EXPECT_NE(recorded.origin.find(other.string()), std::string::npos);

  std::ofstream(other / "summary.json") << "{not json";
  EXPECT_EQ(choose_python("", {other}).python, "python3");
  fs::remove_all(dir);
}

TEST(PythonEngine, FindsThePackageOfABuildTreeAndOfAnInstall) {
  const fs::path dir = test::make_temp_dir("ophook-engine-");
  EXPECT_EQ(find_replay_package(dir / "build" / "ophook"), std::nullopt);
  // Build tree: build/ophook beside build/python_shim/ophook.
  fs::create_directories(dir / "build" / "python_shim" / "ophook" / "_replay");
  std::ofstream(dir / "build" / "python_shim" / "ophook" / "_replay" / "__main__.py") << "";
  EXPECT_EQ(find_replay_package(dir / "build" / "ophook"), dir / "build" / "python_shim" / "ophook");
  // Installed: site-packages/ophook/ophook inside the package.
  fs::create_directories(dir / "site" / "ophook" / "_replay");
  std::ofstream(dir / "site" / "ophook" / "_replay" / "__main__.py") << "";
  EXPECT_EQ(find_replay_package(dir / "site" / "ophook" / "ophook"), dir / "site" / "ophook");
  fs::remove_all(dir);
}

TEST(PythonEngine, TheCommandLoadsThePackageFromItsDirectory) {
  const auto command = engine_command_line({"/usr/bin/python3", "python3 in PATH"}, "/b/python_shim/ophook",
                                           "ophook._replay", {"replay", "/runs/a", "--mode", "exact"});
  ASSERT_GE(command.size(), 10u);
  EXPECT_EQ(command[0], "/usr/bin/python3");
  EXPECT_EQ(command[1], "-c");
  // The bootstrap never puts the package's parent (which holds the shim's sitecustomize.py) on
  // sys.path: it loads the package by location.
  EXPECT_NE(command[2].find("spec_from_file_location"), std::string::npos);
  EXPECT_EQ(command[2].find("sys.path"), std::string::npos);
  EXPECT_EQ(command[3], "/b/python_shim/ophook");
  EXPECT_EQ(command[4], "python3 in PATH");
  EXPECT_EQ(command[5], "ophook._replay");
  EXPECT_EQ(std::vector<std::string>(command.begin() + 6, command.end()),
            (std::vector<std::string>{"replay", "/runs/a", "--mode", "exact"}));
}

}  // namespace
}  // namespace ophook::cli
