#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/run_report.hpp"

namespace ophook::cli {

/// The call that made process `index`'s first NaN/Inf (its index's first_nonfinite, when born
/// there): its record when the records are read and hold it, else what summary.json says of it.
/// nullopt when the process made none. Pure.
std::optional<NonfiniteCall> culprit_call(const ProcessRun& process, std::size_t index);

/// Each process's first NaN/Inf, born or received, from its index (read/process_index.hpp), in
/// process order; processes with neither are left out.
std::vector<RankNonfinite> first_nonfinite_per_rank(const std::vector<ProcessRun>& processes);

/// Whether born culprit `a` happened before `b` in causal order: in a group both ranks belong to,
/// `a` came before a collective that `b` had issued before its own (a's count there is lower), so
/// `a` preceded it whatever the hosts' clocks say. False for calls concurrent by that measure.
bool causally_before(const RankNonfinite& a, const RankNonfinite& b);

/// The born culprit that came first: causal order, then step, then time, then the earlier process; nullopt
/// when no rank made one. Returns an index into `ranks`.
std::optional<std::size_t> causal_first(const std::vector<RankNonfinite>& ranks);

}  // namespace ophook::cli
