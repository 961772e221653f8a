#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/run_report.hpp"

namespace ophook::cli {

/// The first NaN/Inf of one process: summary.json's "first_nonfinite" when present (none when it
/// is null); without it, the first record whose outputs hold NaN/Inf while its inputs do not,
/// else the first whose outputs hold any. Pure.
std::optional<NonfiniteCall> find_first_nonfinite(const ProcessRun& process, std::size_t index);

/// One rank's first NaN/Inf: born there (its culprit) or received by a collective.
struct RankNonfinite {
  std::size_t process = 0;  // index into RunReport::processes
  bool received = false;
  std::int64_t seq = 0, step = 0;
  // When it ran (every process of a host shares CLOCK_MONOTONIC): only to order calls the
  // collectives leave concurrent. Unknown (only summary.json names it): after the known.
  std::int64_t t_ns = std::numeric_limits<std::int64_t>::max();
  std::string op, source;
  // received: the collective that brought it in.
  std::string group;
  std::int64_t group_seq = 0;
  // born: per group this rank has a collective in, the number of its last collective issued before
  // the culprit, 0 for none (the groups' collective numbers cut each rank's timeline alike).
  std::map<std::string, std::int64_t> after_collective;
};

/// Each process's first NaN/Inf, born or received, in process order: from summary.json's
/// "first_nonfinite" and "first_received_nonfinite", else (a rank killed before its summary) from
/// its records. Processes with neither are left out.
std::vector<RankNonfinite> first_nonfinite_per_rank(const RunReport& report);

/// Whether born culprit `a` happened before `b` in causal order: in a group both ranks belong to,
/// `a` came before a collective that `b` had issued before its own (a's count there is lower), so
/// `a` preceded it whatever the hosts' clocks say. False for calls concurrent by that measure.
bool causally_before(const RankNonfinite& a, const RankNonfinite& b);

/// The born culprit that came first: causal order, then step, then time, then the earlier process; nullopt
/// when no rank made one. Returns an index into `ranks`.
std::optional<std::size_t> causal_first(const std::vector<RankNonfinite>& ranks);

}  // namespace ophook::cli
