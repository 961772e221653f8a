#include "render/chrome_trace.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "ophook/error.hpp"
#include "render/json_text.hpp"

namespace ophook::cli {

using nlohmann::json;

namespace {

/// The pid a process's records carry (the first record's), for naming it.
std::int64_t process_pid(const ProcessRun& process) {
  if (!process.records.empty() && process.records.front().pid != 0)
    return process.records.front().pid;
  return process.index.pid.value_or(0);
}

}  // namespace

json chrome_event(const TraceRecord& record, std::int64_t fallback_pid) {
  json shapes = json::array(), output_shapes = json::array();
  for (const ArraySpec& array : record.arrays) {
    (array.is_output() ? output_shapes : shapes).push_back(array.shape);
  }
  json args = {{"seq", record.seq},
               {"source", nullable<json>(record.source)},
               {"module", nullable<json>(record.module)},
               {"phase", nullable<json>(record.phase)},
               {"shapes", std::move(shapes)},
               {"output_shapes", std::move(output_shapes)}};
  if (record.error) args["error"] = *record.error;
  return {{"name", record.op},
          {"cat", record.level.empty() ? record.framework : record.level},
          {"ph", "X"},
          {"ts", static_cast<double>(record.t_ns) / 1000.0},
          {"dur", static_cast<double>(record.dur_ns) / 1000.0},
          {"pid", record.pid != 0 ? record.pid : fallback_pid},
          {"tid", record.tid},
          {"args", std::move(args)}};
}

void write_chrome_trace(const RunReport& report, std::ostream& out) {
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  bool first = true;
  auto emit = [&](const json& event) {
    out << (first ? "\n" : ",\n") << compact(event);
    first = false;
  };
  for (const ProcessRun& process : report.processes) {
    const std::int64_t pid = process_pid(process);
    emit({{"name", "process_name"},
          {"ph", "M"},
          {"pid", pid},
          {"tid", 0},
          {"args", {{"name", fmt::format("{} (pid {})", process.label, pid)}}}});
    std::set<std::pair<std::int64_t, std::int64_t>> threads;
    for (const TraceRecord& r : process.records) threads.emplace(r.pid != 0 ? r.pid : pid, r.tid);
    for (const auto& [thread_pid, tid] : threads) {
      emit({{"name", "thread_name"},
            {"ph", "M"},
            {"pid", thread_pid},
            {"tid", tid},
            {"args", {{"name", fmt::format("tid {}", tid)}}}});
    }
    for (const TraceRecord& r : process.records) emit(chrome_event(r, pid));
  }
  out << "\n]}\n";
}

void write_chrome_trace_file(const RunReport& report, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(fmt::format("{}: cannot be written: {}", path.string(), std::strerror(errno)));
  }
  write_chrome_trace(report, out);
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace ophook::cli
