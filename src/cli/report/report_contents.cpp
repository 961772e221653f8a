#include "report/report_contents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <utility>

#include "ophook/error.hpp"
#include "read/monitor_file.hpp"
#include "read/parallel_for.hpp"
#include "read/process_dirs.hpp"
#include "read/trace_reader.hpp"
#include "report/first_nonfinite.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {

/// The processes whose monitor fired that the report looks into (the text shows as many).
constexpr std::size_t kSpikeProcesses = 8;

/// Each process's index and monitor log, read on every core; the run's counts summed as they come,
/// so that memory holds one process's counts at a time beside the run's, whatever the ranks.
void read_indexes(RunReport& report) {
  std::mutex lock;
  std::vector<std::vector<std::string>> warnings_of(report.processes.size());  // said in process order
  parallel_for(report.processes.size(), default_thread_count(), [&](std::size_t i) {
    ProcessRun& process = report.processes[i];
    std::vector<std::string>& warnings = warnings_of[i];
    std::error_code ec;
    process.has_trace = fs::exists(process.dir / "trace.jsonl", ec);
    if (process.has_trace || fs::exists(process.dir / "summary.json", ec)) {
      process.index = read_process_index(process.dir, warnings);
    }
    process.monitor = read_monitor_file(process.dir, warnings);
    const std::lock_guard<std::mutex> held(lock);
    report.counts.add(process.index.counts);
    const std::uint64_t calls = process.index.counts.calls;
    process.index.counts = CallCounts();
    process.index.counts.calls = calls;
  });
  for (auto& warnings : warnings_of) std::move(warnings.begin(), warnings.end(), std::back_inserter(report.warnings));
  // Most calls first, ties by name: the same page whichever order the processes saw their ops in.
  std::sort(report.counts.ops.begin(), report.counts.ops.end(), [](const OpTotals& a, const OpTotals& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.op < b.op;
  });
}

/// The records of the processes the report looks into calls of.
void read_records(RunReport& report, const std::vector<std::size_t>& which) {
  parallel_for(which.size(), default_thread_count(), [&](std::size_t i) {
    ProcessRun& process = report.processes[which[i]];
    if (!process.has_trace) return;
    std::vector<std::string> ignored;  // said when the index was read
    process.records = read_trace(process.dir / "trace.jsonl", ignored).records;
  });
}

/// The monitor's trigger steps, each with the call that made it (report/spike_origin.hpp), in the
/// processes whose records were read.
void find_spikes(RunReport& report, const std::vector<std::size_t>& with_records) {
  for (const std::size_t p : with_records) {
    const ProcessRun& process = report.processes[p];
    std::optional<std::int64_t> last_step;
    std::size_t found = 0;
    for (const MonitorTrigger& trigger : process.monitor.triggers) {
      if (trigger.step == last_step || found == kMaxSpikes) continue;
      last_step = trigger.step, ++found;
      report.spikes.push_back({p, &trigger, find_spike_origin(process.records, trigger.step),
                               first_input_files(process.records, trigger.step)});
    }
  }
}

/// The rank directories the run lacks: the ranks below the largest rank directory or in a process
/// group's members that have none, the ranks without their own account, and those of an earlier
/// run (`stale` as find_processes named them, root and pid<PID> directories left aside: what a
/// run of ranks is missing is what the exit status says).
void find_gaps(RunReport& report, const std::vector<std::string>& stale) {
  std::set<std::int64_t> present;
  std::int64_t world = 0;
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    const ProcessRun& process = report.processes[i];
    const auto& rank = process.rank;
    if (!rank) continue;
    if (!process.index.partial.empty()) report.partial.push_back(i);
    present.insert(*rank), world = std::max(world, *rank + 1);
    for (const auto& [group, facts] : process.index.collectives) {
      for (const std::int64_t member : facts.ranks) world = std::max(world, member + 1);
    }
  }
  for (std::int64_t rank = 0; rank < world; ++rank) {
    if (!present.contains(rank)) report.missing_ranks.push_back(rank);
  }
  std::copy_if(stale.begin(), stale.end(), std::back_inserter(report.stale),
               [](const std::string& name) { return name.starts_with("rank"); });
}

/// The parting the first process that heard of one names, with the two processes to compare.
std::optional<ReplicaParting> replica_parting_of(const std::vector<ProcessRun>& processes) {
  for (const ProcessRun& process : processes) {
    if (!process.index.replicas_parted) continue;
    ReplicaParting parting;
    parting.parted = *process.index.replicas_parted;
    const auto parted = parted_rank(parting.parted), agreeing = agreeing_rank(parting.parted);
    for (std::size_t i = 0; i < processes.size(); ++i) {
      const auto& rank = processes[i].rank;
      if (!rank || !processes[i].has_trace) continue;
      if (rank == parted) parting.parted_process = i;
      if (rank == agreeing) parting.agreeing_process = i;
    }
    return parting;
  }
  return std::nullopt;
}

}  // namespace

RunReport load_run_report(const fs::path& dir, bool every_record) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw Error(fmt::format("{}: directory not found", dir.string()));
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: not a directory", dir.string()));
  RunReport report;
  report.dir = dir;
  std::vector<std::string> stale;
  for (ProcessDir& process : find_processes(dir, "", report.warnings, {.summary_suffices = true, .stale = &stale})) {
    ProcessRun run;
    run.label = std::move(process.name), run.dir = std::move(process.dir);
    if (process.kind == ProcessDir::Kind::Rank) run.rank = process.number;
    report.processes.push_back(std::move(run));
  }
  read_indexes(report);
  const bool any_trace = std::any_of(report.processes.begin(), report.processes.end(),
                                     [](const ProcessRun& p) { return p.counted(); });
  if (!any_trace) throw Error(fmt::format("{}: not found", (dir / "trace.jsonl").string()));
  if (!report.processes.front().counted()) {
    report.warnings.push_back(fmt::format("{}: not found; showing the other processes only",
                                          (dir / "trace.jsonl").string()));
  }
  find_gaps(report, stale);
  // The run's first NaN/Inf is the earliest culprit over its processes in causal order (the
  // collectives' numbers), then by step and time; a collective that received it is none.
  report.ranks = first_nonfinite_per_rank(report.processes);
  const auto first = causal_first(report.ranks);
  report.replicas = replica_parting_of(report.processes);
  const bool replicas_compared =
      report.replicas && report.replicas->parted_process && report.replicas->agreeing_process;
  std::vector<std::size_t> with_records;
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    const bool fired = !report.processes[i].monitor.triggers.empty();
    const bool culprit = first && report.ranks[*first].process == i;
    const bool replica = replicas_compared &&
                         (i == report.replicas->parted_process || i == report.replicas->agreeing_process);
    if (every_record || culprit || replica || (fired && with_records.size() < kSpikeProcesses)) {
      with_records.push_back(i);
    }
  }
  read_records(report, with_records);
  if (replicas_compared) {
    const ProcessRun& parted = report.processes[*report.replicas->parted_process];
    const ProcessRun& agreeing = report.processes[*report.replicas->agreeing_process];
    find_where_replicas_part(*report.replicas, parted.records, parted.dir, agreeing.records, agreeing.dir);
  }
  if (first) {
    const std::size_t process = report.ranks[*first].process;
    report.first_nonfinite = culprit_call(report.processes[process], process);
  }
  find_spikes(report, with_records);
  return report;
}

}  // namespace ophook::cli
