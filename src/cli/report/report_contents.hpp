#pragma once
#include <filesystem>

#include "report/run_report.hpp"

namespace ophook::cli {

/// Reads DIR/trace.jsonl, DIR/summary.json and the same files of every process directory of the
/// run (read/process_dirs.hpp: stale directories of an earlier run left out with a warning).
/// Throws ophook::Error naming the file for input errors (missing directory, no trace.jsonl
/// anywhere, malformed trace line, unreadable summary.json).
RunReport load_run_report(const std::filesystem::path& dir);

}  // namespace ophook::cli
