#pragma once
#include <filesystem>

#include "compare/result.hpp"

namespace ophook::cli {

struct CompareOptions {
  std::filesystem::path base_dir, new_dir;
  Tolerance tolerance;
  unsigned threads = 1;
};

/// Compares two runs process by process: root with root, rank<R> with rank<R>, pid<PID>
/// directories in the order their processes started (compare/process_pairing.hpp). Within a process
/// pair, records are paired 1:1 when the op sequences are equal, else along a longest common
/// subsequence of op names; every pair is compared, marked origin or propagated, and summarised
/// per op over all processes. Throws ophook::Error naming the file for any input error (missing
/// directory or root trace, malformed line, missing or corrupt .npy).
CompareResult run_comparison(const CompareOptions& options);

}  // namespace ophook::cli
