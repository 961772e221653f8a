#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "read/trace_model.hpp"

namespace ophook::cli {

/// One process's output: the root directory or a pid<PID>/ or rank<R>/ subdirectory.
struct ProcessRun {
  std::string label;  // "root", "pid4242", "rank1"
  std::filesystem::path dir;
  bool has_trace = false;
  std::vector<TraceRecord> records;
  std::optional<nlohmann::json> summary;  // summary.json, when present
};

struct OpTotals {
  std::string op;
  std::uint64_t calls = 0;
  double total_ns = 0, max_ns = 0;
};

/// The first call whose outputs hold NaN/Inf.
struct NonfiniteCall {
  std::size_t process = 0;              // index into RunReport::processes
  const TraceRecord* record = nullptr;  // null when only summary.json names it
  nlohmann::json from_summary;          // summary.json's "first_nonfinite" when that is the source
  std::string value_path;               // "outputs[0]" when found by scanning
  std::uint64_t nan = 0, inf = 0;
};

/// Everything `ophook report` shows about one output directory.
struct RunReport {
  std::filesystem::path dir;
  std::vector<ProcessRun> processes;  // as find_processes lists them (read/process_dirs.hpp)
  std::vector<OpTotals> ops;          // over all processes, most calls first
  std::uint64_t total_calls = 0;
  double total_ns = 0;
  std::optional<NonfiniteCall> first_nonfinite;  // the earliest over the processes: by step, then time
  std::vector<std::string> warnings;
};

/// Reads DIR/trace.jsonl, DIR/summary.json and the same files of every process directory of the
/// run (read/process_dirs.hpp: stale directories of an earlier run left out with a warning).
/// Throws ophook::Error naming the file for input errors (missing directory, no trace.jsonl
/// anywhere, malformed trace line, unreadable summary.json).
RunReport load_run_report(const std::filesystem::path& dir);

/// The first NaN/Inf of one process: summary.json's "first_nonfinite" when present (none when it
/// is null); without it, the first record whose outputs hold NaN/Inf while its inputs do not,
/// else the first whose outputs hold any. Pure.
std::optional<NonfiniteCall> find_first_nonfinite(const ProcessRun& process, std::size_t index);

}  // namespace ophook::cli
