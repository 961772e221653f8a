#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "compare/result.hpp"

namespace ophook::cli {

/// Writes the full comparison as one JSON document (runs, tolerances, verdict, values compared,
/// first divergence and first origin, process pairs, per-op table, unmatched calls, every pair
/// with its values and origin marking). Pairs are written one at a time, so the memory used does
/// not grow with the run.
void write_compare_json(const CompareResult& result, std::ostream& out);

/// write_compare_json into `path`; throws ophook::Error naming the file when it cannot be written.
void write_compare_json_file(const CompareResult& result, const std::filesystem::path& path);

}  // namespace ophook::cli
