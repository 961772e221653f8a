#include "files/rank_directory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ophook/error.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

/// Why `existing` (a rank<R>/ in the way) belongs to this run or is no directory, or "" when an
/// earlier run left it. The criterion of `ophook report` (cli/read/process_dirs.cpp): a process
/// directory whose summary.json names another root pid is an earlier run's.
std::string in_use(const fs::path& existing, int root_pid) {
  std::error_code ec;
  if (fs::symlink_status(existing, ec).type() != fs::file_type::directory) {
    return "is not a directory";
  }
  std::ifstream in(existing / "summary.json");
  if (!in) {
    return fs::exists(existing / "trace.jsonl", ec) ? "holds a process still running, or a killed one"
                                                    : "";
  }
  const auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto its_root = summary.is_object() ? summary.find("root_pid") : summary.end();
  const bool ours =
      its_root != summary.end() && its_root->is_number_integer() && its_root->get<long>() == root_pid;
  return ours ? "holds another process of this run" : "";
}

/// Removes an earlier run's files from `existing` as a new run would, then the directory itself.
std::string clear_earlier_run(const fs::path& existing) {
  try {
    OutputDir(existing.string(), OutputDir::Leaf::NoFollow).remove_previous_run_files();
  } catch (const Error& e) {
    return fmt::format("cannot be cleared: {}", e.what());
  }
  if (::rmdir(existing.c_str()) != 0) {
    return errno == ENOTEMPTY || errno == EEXIST ? "holds files an earlier run did not write"
                                                 : std::strerror(errno);
  }
  return "";
}

}  // namespace

std::string name_after_rank(OutputDir& dir, long rank, int root_pid) {
  const std::string name = fmt::format("rank{}", rank);
  int error = dir.rename(name);
  if (error == EEXIST) {
    const fs::path existing = fs::path(dir.path()).parent_path() / name;
    std::string why = in_use(existing, root_pid);
    if (why.empty()) why = clear_earlier_run(existing);
    if (!why.empty()) return fmt::format("{} {}", existing.string(), why);
    error = dir.rename(name);
  }
  return error == 0 ? "" : fmt::format("cannot be renamed {}: {}", name, std::strerror(error));
}

}  // namespace ophook::core
