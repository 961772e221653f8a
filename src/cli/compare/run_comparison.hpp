#pragma once
#include <cstddef>
#include <filesystem>

#include "compare/result.hpp"

namespace ophook::cli {

struct CompareOptions {
  std::filesystem::path base_dir, new_dir;
  Tolerance tolerance;
  unsigned threads = 1;
};

/// A comparison of more process pairs than this compares them one per thread and keeps the
/// records, steps and pairs only of the processes its outputs show call by call — the first, the
/// first kDetailedProcesses with a differing or one-sided call, those of the earliest divergence
/// and origin — read and compared again once the rest is done, so that its memory does not grow
/// with the number of processes; every process keeps its counts, first calls and op rows.
inline constexpr std::size_t kDetailedProcesses = 20;

/// Compares two runs process by process: root with root, rank<R> with rank<R>, pid<PID>
/// directories in the order their processes started (compare/process_pairing.hpp). Within a process
/// pair, records are paired 1:1 when the op sequences are equal, else along a longest common
/// subsequence of op names; every pair is compared, marked origin or propagated, and summarised
/// per op over all processes. Throws ophook::Error naming the file for any input error (missing
/// directory or root trace, malformed line, missing or corrupt .npy).
CompareResult run_comparison(const CompareOptions& options);

/// Aligns, compares and totals the records `process` holds (its base and other, their
/// directories for the .npy files) on `threads` threads, as run_comparison does each process pair.
void compare_loaded(ProcessComparison& process, Tolerance tolerance, unsigned threads);

}  // namespace ophook::cli
