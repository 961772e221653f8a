#pragma once
#include <vector>

#include "compare/align/alignment.hpp"
#include "read/trace_model.hpp"

namespace ophook::cli {

/// How the records of two processes were paired.
struct RecordAlignment {
  std::vector<AlignStep> steps;  // indices into the two record lists
  bool identical = false;        // equal op sequences: paired 1:1
};

/// Pairs the records (in seq order) of one process of each run. Equal op sequences pair 1:1.
/// Otherwise thread by thread and, within a thread, level by level: the threads of each run in the
/// order of their first record are paired in that order (so a helper thread whose calls
/// interleave differently with the main thread's, like a multiprocessing queue's feeder, still
/// pairs with its counterpart), and each level of a pair of threads is aligned on its own along a
/// longest common subsequence of op names (aten ops added or gone in one run never shift the
/// pairs of the torch calls above them); the calls of a thread or level only one run has are
/// one-sided. Steps come in BASE's seq order, each NEW-only call just before the next BASE call of
/// its thread and level (after all of them when there is none). Pure.
RecordAlignment align_records(const std::vector<TraceRecord>& base,
                              const std::vector<TraceRecord>& other);

}  // namespace ophook::cli
