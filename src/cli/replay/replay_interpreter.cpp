#include "replay/replay_interpreter.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "exit_codes.hpp"
#include "launch/child_process.hpp"
#include "launch/library_locator.hpp"
#include "ophook/error.hpp"
#include "read/summary_file.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere else

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {

// Loads the package from its directory (argv[1]) and runs the engine module (argv[3]:
// ophook._replay, ophook._bisect) as __main__ with the rest of argv. A missing NumPy and a failure
// of the engine itself exit with statuses of their own, so that neither reads as one of the
// engine's answers ("the calls differ", 1).
constexpr const char* kBootstrap = R"(import sys
package, origin, engine = sys.argv[1], sys.argv[2], sys.argv[3]
sys.argv = [engine] + sys.argv[4:]
try:
    import numpy
except ImportError as error:
    sys.stderr.write("ophook: the Python at %s (%s) cannot import numpy (%s): choose one that has "
                     "numpy and torch with --python PATH\n" % (sys.executable, origin, error))
    sys.exit(2)
import importlib.util, runpy, traceback
spec = importlib.util.spec_from_file_location("ophook", package + "/__init__.py", submodule_search_locations=[package])
module = importlib.util.module_from_spec(spec)
sys.modules["ophook"] = module
spec.loader.exec_module(module)
try:
    runpy.run_module(engine, run_name="__main__", alter_sys=True)
except (SystemExit, KeyboardInterrupt):
    raise
except BaseException:
    traceback.print_exc()
    sys.exit(3)
)";
constexpr int kReplayFailed = 3;

std::optional<std::string> recorded_python(const fs::path& run) {
  const auto file = read_summary_file(run);
  if (!file.document) return std::nullopt;  // the interpreter is then looked for elsewhere
  const auto& summary = *file.document;
  const auto versions = summary.find("versions");
  if (versions == summary.end() || !versions->is_object()) return std::nullopt;
  const auto python = versions->find("python_executable");
  if (python == versions->end() || !python->is_string()) return std::nullopt;
  return python->get<std::string>();
}

bool is_replay_package(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "_replay" / "__main__.py", ec);
}

void prepare_replay_environment() {
  std::vector<std::string> settings;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with("OPHOOK_")) settings.emplace_back(text.substr(0, text.find('=')));
  }
  for (const std::string& name : settings) unsetenv(name.c_str());
  setenv("OPHOOK_DISABLE", "1", 1);
  if (const char* preload = std::getenv("LD_PRELOAD")) {
    const std::string kept = preload_without_ophook(preload);
    if (kept.empty()) {
      unsetenv("LD_PRELOAD");
    } else {
      setenv("LD_PRELOAD", kept.c_str(), 1);
    }
  }
}

}  // namespace

PythonChoice choose_python(const std::string& explicit_python, const std::vector<fs::path>& runs) {
  if (!explicit_python.empty()) return {explicit_python, "--python"};
  for (const fs::path& run : runs) {
    if (auto python = recorded_python(run); python && ::access(python->c_str(), X_OK) == 0) {
      return {*python, fmt::format("the interpreter that recorded {}", run.string())};
    }
  }
  return {"python3", "python3 in PATH"};
}

std::optional<fs::path> find_replay_package(const fs::path& exe) {
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / "python_shim" / "ophook", dir}) {
    if (is_replay_package(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string preload_without_ophook(std::string_view existing) {
  std::string kept;
  std::size_t pos = 0;
  while (pos < existing.size()) {
    const std::size_t end = std::min(existing.find_first_of(" :", pos), existing.size());
    const std::string_view entry = existing.substr(pos, end - pos);
    if (!entry.empty() && fs::path(entry).filename() != "libophook.so") {
      if (!kept.empty()) kept += ':';
      kept += entry;
    }
    pos = end + 1;
  }
  return kept;
}

std::vector<std::string> engine_command_line(const PythonChoice& python, const fs::path& package,
                                             const std::string& engine, const std::vector<std::string>& args) {
  std::vector<std::string> command{python.python, "-c", kBootstrap, package.string(), python.origin, engine};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

int run_engine(const PythonChoice& python, const std::string& engine, const std::vector<std::string>& args) {
  const fs::path exe = self_executable();
  const auto package = find_replay_package(exe);
  if (!package) {
    throw Error(fmt::format("the replay package (ophook/_replay) is not beside {}: rebuild, or reinstall the package",
                            exe.string()));
  }
  prepare_replay_environment();
  const int status = run_and_wait(engine_command_line(python, *package, engine, args));
  if (status == kExitNotFound || status == kExitNotExecutable) {
    throw Error(fmt::format("cannot run the Python interpreter {} ({}): choose one that has numpy and torch with "
                            "--python PATH", python.python, python.origin));
  }
  if (status == kReplayFailed) {
    throw Error(fmt::format("{} failed under {} ({}); its traceback is above", engine, python.python, python.origin));
  }
  return status;
}

}  // namespace ophook::cli
