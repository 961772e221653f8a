#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::cli {

/// The engines are Python (the ophook package's _replay, _bisect and _blame modules): re-running
/// a recorded op needs NumPy and torch, and bisect reads the results of the runs it makes with
/// NumPy. These find an interpreter and the package, and run an engine.

/// The interpreter chosen, and why it was chosen (for messages).
struct PythonChoice {
  std::string python;  // a path, or a name searched in PATH
  std::string origin;  // "--python", "the interpreter that recorded RUN", "python3 in PATH"
};

/// `explicit_python` when given; else the interpreter that recorded the first of `runs` that
/// names one still present (summary.json: versions.python_executable); else python3 in PATH.
PythonChoice choose_python(const std::string& explicit_python, const std::vector<std::filesystem::path>& runs);

/// The ophook package that holds the replay package, for the ophook executable at `exe`: in a build tree
/// exe_dir/python_shim/ophook, in an installed package exe_dir itself; nullopt when neither holds
/// _replay/__main__.py.
std::optional<std::filesystem::path> find_replay_package(const std::filesystem::path& exe);

/// `existing` (an LD_PRELOAD value) without the entries that name libophook.so. Pure.
std::string preload_without_ophook(std::string_view existing);

/// The command running the engine module `engine` ("ophook._replay", "ophook._bisect",
/// "ophook._blame") with `args`: the package is loaded from its directory without putting that
/// directory's parent on sys.path (in a build tree it holds the shim's sitecustomize.py, which
/// would start recording). Pure.
std::vector<std::string> engine_command_line(const PythonChoice& python, const std::filesystem::path& package,
                                             const std::string& engine, const std::vector<std::string>& args);

/// Runs the engine with `args` and returns its exit status (its own answer: replay's 0 match, 1
/// differences, 2 input error). The engine gets this process's environment without OPHOOK_*
/// settings (OPHOOK_DISABLE=1 instead) and without libophook.so in LD_PRELOAD: it must not record
/// itself (bisect records the programs it starts, which it runs through `ophook run`). Throws
/// ophook::Error naming the interpreter when it cannot be started or dies.
int run_engine(const PythonChoice& python, const std::string& engine, const std::vector<std::string>& args);

}  // namespace ophook::cli
