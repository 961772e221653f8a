#pragma once
#include <filesystem>

#include "report/run_report.hpp"

namespace ophook::cli {

/// Reads the run in DIR: every process directory's index (read/process_index.hpp; stale
/// directories of an earlier run left out with a warning, read/process_dirs.hpp) and monitor.jsonl,
/// on every core, and the records only of the processes the report looks into — every process's
/// when `every_record` (the HTML page, the Chrome trace). Throws ophook::Error naming the file for
/// input errors (missing directory, no trace.jsonl anywhere, malformed trace line, unreadable
/// summary.json).
RunReport load_run_report(const std::filesystem::path& dir, bool every_record);

}  // namespace ophook::cli
