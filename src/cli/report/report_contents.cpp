#include "report/report_contents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <unordered_map>
#include <utility>

#include "ophook/error.hpp"
#include "read/monitor_file.hpp"
#include "read/parallel_for.hpp"
#include "read/process_dirs.hpp"
#include "read/summary_file.hpp"
#include "read/trace_reader.hpp"
#include "report/first_nonfinite.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// `dir`/summary.json, when there is one; a malformed one stops the report, naming the file.
std::optional<json> read_summary(const fs::path& dir) {
  auto file = read_summary_file(dir);
  if (!file.problem.empty()) throw Error(file.problem);
  return std::move(file.document);
}

ProcessRun load_process(std::string label, const fs::path& dir,
                        std::vector<std::string>& warnings) {
  ProcessRun process;
  process.label = std::move(label);
  process.dir = dir;
  std::error_code ec;
  const fs::path trace = dir / "trace.jsonl";
  if (fs::exists(trace, ec)) {
    process.records = read_trace(trace, warnings, default_thread_count()).records;
    process.has_trace = true;
  }
  process.summary = read_summary(dir);
  process.monitor = read_monitor_file(dir, warnings);
  return process;
}

void total_ops(RunReport& report) {
  std::unordered_map<std::string, std::size_t> index;
  for (const ProcessRun& process : report.processes) {
    for (const TraceRecord& r : process.records) {
      auto [it, inserted] = index.emplace(r.op, report.ops.size());
      if (inserted) report.ops.push_back({r.op});
      OpTotals& t = report.ops[it->second];
      ++t.calls;
      t.total_ns += static_cast<double>(r.dur_ns);
      t.max_ns = std::max(t.max_ns, static_cast<double>(r.dur_ns));
      ++report.total_calls;
      report.total_ns += static_cast<double>(r.dur_ns);
    }
  }
  std::stable_sort(report.ops.begin(), report.ops.end(),
                   [](const OpTotals& a, const OpTotals& b) { return a.calls > b.calls; });
}

/// The monitor's trigger steps, each with the call that made it (report/spike_origin.hpp).
void find_spikes(RunReport& report) {
  for (std::size_t p = 0; p < report.processes.size(); ++p) {
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

}  // namespace

RunReport load_run_report(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw Error(fmt::format("{}: directory not found", dir.string()));
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: not a directory", dir.string()));
  RunReport report;
  report.dir = dir;
  for (const ProcessDir& process : find_processes(dir, "", report.warnings)) {
    report.processes.push_back(load_process(process.name, process.dir, report.warnings));
  }
  const bool any_trace = std::any_of(report.processes.begin(), report.processes.end(),
                                     [](const ProcessRun& p) { return p.has_trace; });
  if (!any_trace) throw Error(fmt::format("{}: not found", (dir / "trace.jsonl").string()));
  if (!report.processes.front().has_trace) {
    report.warnings.push_back(fmt::format("{}: not found; showing the other processes only",
                                          (dir / "trace.jsonl").string()));
  }
  total_ops(report);
  // The run's first NaN/Inf is the earliest culprit over its processes in causal order (the
  // collectives' numbers), then by step and time; a collective that received it is none.
  const auto ranks = first_nonfinite_per_rank(report);
  if (const auto first = causal_first(ranks)) {
    const std::size_t process = ranks[*first].process;
    report.first_nonfinite = find_first_nonfinite(report.processes[process], process);
  }
  find_spikes(report);
  return report;
}

}  // namespace ophook::cli
