#include "report/report_contents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <unordered_map>
#include <utility>

#include "ophook/error.hpp"
#include "ophook/model/op_kinds.hpp"
#include "read/parallel_for.hpp"
#include "read/process_dirs.hpp"
#include "read/summary_file.hpp"
#include "read/trace_reader.hpp"

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
  return process;
}

bool has_nonfinite(const ArraySpec& array) {
  return array.stats && (array.stats->nan > 0 || array.stats->inf > 0);
}


NonfiniteCall scanned_hit(std::size_t index, const TraceRecord& record) {
  NonfiniteCall hit;
  hit.process = index;
  hit.record = &record;
  for (const ArraySpec& array : record.arrays) {
    if (array.is_output() && has_nonfinite(array)) {
      hit.value_path = array.path;
      hit.nan = array.stats->nan;
      hit.inf = array.stats->inf;
      break;
    }
  }
  return hit;
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

}  // namespace

std::optional<NonfiniteCall> find_first_nonfinite(const ProcessRun& process, std::size_t index) {
  if (process.summary) {
    auto it = process.summary->find("first_nonfinite");
    // null is the recorder's answer (it knew which NaNs were the program's own: scalar -inf
    // arguments, np.errstate): only a run without it (killed before its summary) is scanned.
    if (it != process.summary->end() && it->is_null()) return std::nullopt;
    if (it != process.summary->end() && it->is_object()) {
      NonfiniteCall hit;
      hit.process = index;
      hit.from_summary = *it;
      if (auto seq = it->find("seq"); seq != it->end() && seq->is_number_integer()) {
        for (const TraceRecord& r : process.records) {
          if (r.seq == seq->get<std::int64_t>()) {
            hit = scanned_hit(index, r);
            hit.from_summary = *it;
            break;
          }
        }
      }
      return hit;
    }
  }
  const TraceRecord* any = nullptr;
  for (const TraceRecord& r : process.records) {
    if (core::returns_uninitialized_memory(r.op)) continue;  // whatever the allocator left there
    bool bad_out = false, bad_in = false;
    for (const ArraySpec& array : r.arrays) {
      (array.is_output() ? bad_out : bad_in) |= has_nonfinite(array);
    }
    if (bad_out && !bad_in) return scanned_hit(index, r);
    if (bad_out && any == nullptr) any = &r;
  }
  if (any != nullptr) return scanned_hit(index, *any);
  return std::nullopt;
}

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
  // The run's first NaN/Inf is the earliest over its processes: by step, then by time (every
  // process of a run shares CLOCK_MONOTONIC); one known only from a summary.json comes after those
  // with a record, in process order.
  auto order = [](const NonfiniteCall& hit) {
    constexpr auto kUnknown = std::numeric_limits<std::int64_t>::max();
    return hit.record ? std::pair{hit.record->step, hit.record->t_ns} : std::pair{kUnknown, kUnknown};
  };
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    auto hit = find_first_nonfinite(report.processes[i], i);
    if (hit && (!report.first_nonfinite || order(*hit) < order(*report.first_nonfinite))) {
      report.first_nonfinite = std::move(hit);
    }
  }
  return report;
}

}  // namespace ophook::cli
