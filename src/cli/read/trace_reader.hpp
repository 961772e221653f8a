#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "read/trace_model.hpp"

namespace ophook::cli {

/// All records of one trace.jsonl, in file order.
struct TraceFile {
  std::filesystem::path path;
  std::vector<TraceRecord> records;
};

/// Reads `path` (one JSON object per line), parsing on up to `threads` threads. A line that does
/// not parse is an input error (ophook::Error naming the file and line), except the last
/// non-empty line: a killed process may leave it incomplete, so it is skipped with a warning
/// appended to `warnings`. Records lacking "seq" or "op", or with a malformed array value, are
/// input errors too.
TraceFile read_trace(const std::filesystem::path& path, std::vector<std::string>& warnings,
                     unsigned threads = 1);

/// Converts one parsed line; throws ophook::Error (without the file/line prefix) when it is not
/// a record. Exposed for the unit tests.
TraceRecord record_from_json(const nlohmann::json& line);

}  // namespace ophook::cli
