#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "report/run_report.hpp"

namespace ophook::cli {

/// One Chrome Trace Event ("ph": "X") for a record: name = op, ts/dur in microseconds,
/// pid/tid from the record, args = {seq, source, module, phase, shapes, output_shapes}. Pure.
nlohmann::json chrome_event(const TraceRecord& record, std::int64_t fallback_pid);

/// Writes {"traceEvents": [...]} for every record of every process, preceded by process_name
/// and thread_name metadata events ("ph": "M"), as Perfetto and chrome://tracing read it. Events
/// are written one at a time.
void write_chrome_trace(const RunReport& report, std::ostream& out);

/// write_chrome_trace into `path`; throws ophook::Error naming the file on failure.
void write_chrome_trace_file(const RunReport& report, const std::filesystem::path& path);

}  // namespace ophook::cli
