#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "read/monitor_file.hpp"
#include "read/process_index.hpp"
#include "read/trace_model.hpp"
#include "report/replica_parting.hpp"
#include "report/spike_origin.hpp"

namespace ophook::cli {

/// One process's output: the root directory or a pid<PID>/ or rank<R>/ subdirectory.
struct ProcessRun {
  std::string label;  // "root", "pid4242", "rank1"
  std::optional<std::int64_t> rank;  // R of a rank<R> directory (read/process_dirs.hpp)
  std::filesystem::path dir;
  bool has_trace = false;  // its trace.jsonl is there (its summary.json may stand alone for it)
  bool counted() const { return has_trace || index.from_summary; }
  /// Its index; `counts` holds only `calls` once the run's totals have them.
  ProcessIndex index;
  /// Its records, read only where the report looks into calls (the culprit's process, those whose
  /// monitor fired, every process for the HTML page and the Chrome trace): else empty.
  std::vector<TraceRecord> records;
  MonitorLog monitor;  // monitor.jsonl, when present
};

/// A step the training monitor marked, and the call that made it where the records tell.
struct SpikeFinding {
  std::size_t process = 0;
  const MonitorTrigger* trigger = nullptr;  // the step's first trigger, in processes[process].monitor
  std::optional<SpikeOrigin> origin;
  const TraceRecord* inputs = nullptr;  // the step's first call with input files (first_input_files)
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
  CallCounts counts;                  // over all processes, ops by most calls first
  std::vector<RankNonfinite> ranks;   // each process's first NaN/Inf, born or received, in process order
  std::optional<NonfiniteCall> first_nonfinite;  // the earliest culprit: causal order, then step and time
  std::vector<SpikeFinding> spikes;              // per process, its first kMaxSpikes trigger steps
  std::optional<ReplicaParting> replicas;        // where the replicas parted (OPHOOK_REPLICAS)
  std::vector<std::string> warnings;
  /// The rank directories the run lacks (the report's exit status says so): ranks below the largest
  /// one seen or in a process group, with no directory; ranks without their own account
  /// (ProcessIndex::partial); rank directories an earlier run left (find_processes).
  std::vector<std::int64_t> missing_ranks;
  std::vector<std::size_t> partial;  // into processes
  std::vector<std::string> stale;
  bool incomplete() const { return !missing_ranks.empty() || !partial.empty() || !stale.empty(); }
};

}  // namespace ophook::cli
