#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "read/monitor_file.hpp"
#include "read/trace_model.hpp"
#include "report/spike_origin.hpp"

namespace ophook::cli {

/// One process's output: the root directory or a pid<PID>/ or rank<R>/ subdirectory.
struct ProcessRun {
  std::string label;  // "root", "pid4242", "rank1"
  std::filesystem::path dir;
  bool has_trace = false;
  std::vector<TraceRecord> records;
  std::optional<nlohmann::json> summary;  // summary.json, when present
  MonitorLog monitor;                     // monitor.jsonl, when present
};

/// A step the training monitor marked, and the call that made it where the records tell.
struct SpikeFinding {
  std::size_t process = 0;
  const MonitorTrigger* trigger = nullptr;  // the step's first trigger, in processes[process].monitor
  std::optional<SpikeOrigin> origin;
  const TraceRecord* inputs = nullptr;  // the step's first call with input files (first_input_files)
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

/// The trigger steps per process that the report looks into.
inline constexpr std::size_t kMaxSpikes = 5;

/// Everything `ophook report` shows about one output directory.
struct RunReport {
  std::filesystem::path dir;
  std::vector<ProcessRun> processes;  // as find_processes lists them (read/process_dirs.hpp)
  std::vector<OpTotals> ops;          // over all processes, most calls first
  std::uint64_t total_calls = 0;
  double total_ns = 0;
  std::optional<NonfiniteCall> first_nonfinite;  // the earliest culprit: causal order, then step and time
  std::vector<SpikeFinding> spikes;              // per process, its first kMaxSpikes trigger steps
  std::vector<std::string> warnings;
};

}  // namespace ophook::cli
