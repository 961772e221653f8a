#pragma once
#include <filesystem>

#include "compare_result.hpp"

namespace ophook::cli {

struct CompareOptions {
  std::filesystem::path base_dir, new_dir;
  Tolerance tolerance;
  unsigned threads = 1;
};

/// Reads BASE/trace.jsonl and NEW/trace.jsonl, pairs their records (1:1 when the op sequences
/// are equal, else along a longest common subsequence of op names), compares every pair and
/// summarises per op. Throws ophook::Error naming the file for any input error (missing
/// directory or trace, malformed line, missing or corrupt .npy).
CompareResult run_comparison(const CompareOptions& options);

}  // namespace ophook::cli
