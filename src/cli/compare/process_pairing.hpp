#pragma once
#include <optional>
#include <span>
#include <vector>

#include "read/process_dirs.hpp"

namespace ophook::cli {

/// A process of BASE and its counterpart in NEW (indices into the two lists); one side is empty
/// for a process only one run has.
struct ProcessPair {
  std::optional<std::size_t> base, other;
};

/// Pairs root with root, rank<R> with rank<R>, and the pid<PID> directories of the two runs in
/// the order their processes started (ties and unknown starts last, by pid). Result order: the
/// roots, the ranks by R, the pids in BASE's start order, then the pids only NEW has. Pure.
std::vector<ProcessPair> pair_processes(std::span<const ProcessDir> base,
                                        std::span<const ProcessDir> other);

}  // namespace ophook::cli
