#include "replay/recorded_run.hpp"

#include <fmt/format.h>

#include <string>
#include <system_error>
#include <vector>

#include "ophook/error.hpp"
#include "read/process_dirs.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

void check_recorded_run(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: not a directory", dir.string()));
  if (fs::is_regular_file(dir / "trace.jsonl", ec)) return;
  std::vector<std::string> warnings;  // stale and empty process directories are not offered
  std::string children;
  for (const ProcessDir& process : find_processes(dir, "", warnings)) {
    if (process.kind == ProcessDir::Kind::Root) continue;
    children += (children.empty() ? "" : ", ") + process.dir.string();
  }
  throw Error(fmt::format("{}: not found{}", (dir / "trace.jsonl").string(),
                          children.empty() ? "" : "; runs of other processes, to read one by one: " + children));
}

}  // namespace ophook::cli
