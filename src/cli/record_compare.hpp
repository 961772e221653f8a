#pragma once
#include <filesystem>

#include "compare_result.hpp"
#include "trace_model.hpp"

namespace ophook::cli {

/// The run directories the records' "file" names are relative to.
struct RunDirs {
  std::filesystem::path base, other;
};

/// Compares two paired records value by value (arrays and plain leaves matched by path):
/// from the .npy files when both have one, else from the statistics, else shape and dtype only.
/// Also notes different exceptions. Throws ophook::Error naming the file for a missing or
/// corrupt .npy. Uses up to `threads` threads per array. Thread-safe (reads files only).
PairResult compare_records(const TraceRecord& base, const TraceRecord& other, const RunDirs& dirs,
                           Tolerance tolerance, unsigned threads);

/// True when the pair holds an array big enough to be worth all threads on its own.
bool is_large_pair(const TraceRecord& base, const TraceRecord& other);

}  // namespace ophook::cli
