#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "read/trace_model.hpp"

namespace ophook::cli {

struct OpTotals {
  std::string op;
  std::uint64_t calls = 0;
  double total_ns = 0, max_ns = 0;
};

/// What a run's calls were: per op, level, phase and module, and the steps they ran in. A run's
/// are the sum of its processes'.
struct CallCounts {
  std::uint64_t calls = 0;
  double total_ns = 0;
  std::vector<OpTotals> ops;  // in the order first seen
  std::map<std::string, std::uint64_t> levels, phases, modules;
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // sorted, disjoint ranges of steps with calls

  void add(const CallCounts& other);
  /// Counts one call (phase "none" for a call outside forward and backward).
  void count(const std::string& name, double dur_ns, const std::string& level, const std::string& phase,
             const std::string* module, std::int64_t step);
  /// Sorts and joins the step ranges; after a run of count() calls.
  void join_steps();
  /// The totals of op `name`, added (zero) when it is new.
  OpTotals& op(const std::string& name);

 private:
  std::map<std::string, std::size_t> op_index_;  // ops by name
};

/// One process's first NaN/Inf: born there (its culprit) or received by a collective.
struct RankNonfinite {
  std::size_t process = 0;  // index into the run's processes, set by the caller
  bool received = false;
  std::int64_t seq = 0, step = 0;
  // When it ran (every process of a host shares CLOCK_MONOTONIC): only to order calls the
  // collectives leave concurrent. Unknown (an older summary.json): after the known.
  std::int64_t t_ns = std::numeric_limits<std::int64_t>::max();
  std::string op, source;
  // received: the collective that brought it in.
  std::string group;
  std::int64_t group_seq = 0;
  // born: per group this rank has a collective in, the number of its last collective issued before
  // the culprit, 0 for none (the groups' collective numbers cut each rank's timeline alike).
  std::map<std::string, std::int64_t> after_collective;
};

/// What `report` merges of one process, without its records (docs/ranks.md, "Thousands of
/// ranks"): read from the index its summary.json carries, written when the recording ended, or —
/// for a process that left no summary.json (killed), an older one without the index, or a
/// trace.jsonl whose size is not the one the index was made of — counted in one pass over its
/// trace.jsonl, the records dropped once counted. Both give the same facts.
struct ProcessIndex {
  bool from_summary = false;
  std::string partial;  // why the process's own account is missing, e.g. "no summary.json"; else ""
  CallCounts counts;
  /// Per process group this process has collectives in: how many, and the group's members.
  struct Group {
    std::uint64_t calls = 0;
    std::int64_t last_group_seq = 0;
    std::vector<std::int64_t> ranks;  // empty when only the records tell (they do not carry them)
  };
  std::map<std::string, Group> collectives;
  std::optional<RankNonfinite> first_nonfinite;  // born or received, as first_nonfinite_of says
  nlohmann::json culprit;  // summary.json's "first_nonfinite" object, when it names the culprit; else null
  // From summary.json alone (null without it): its "budget" and "write_errors" objects.
  nlohmann::json budget, write_errors;
  /// Its notes.replicas.parted (OPHOOK_REPLICAS): where the replicas of a process group parted,
  /// as this process heard of it. Of the rank lists, only their first kPartedRanksKept and sizes.
  struct ReplicasParted {
    std::int64_t step = 0, every = 1;
    std::string parameter, group;
    std::vector<std::int64_t> ranks, agreeing;  // those outside the value most hold; those holding it
    std::size_t ranks_count = 0, agreeing_count = 0;
  };
  std::optional<ReplicasParted> replicas_parted;
  std::optional<std::uint64_t> files, bytes_written;
  std::optional<std::int64_t> pid;
};

inline constexpr std::size_t kPartedRanksKept = 16;

/// The index of the process whose output is `dir` (a directory may hold its summary.json alone,
/// copied for the merge: its index then stands for any trace.jsonl; with neither, the index is
/// empty and from_summary false). `warnings` gets what a reader
/// should know (a last line cut short); malformed input throws ophook::Error naming the file.
ProcessIndex read_process_index(const std::filesystem::path& dir, std::vector<std::string>& warnings);

/// The index of `records` alone, as a process that left no summary.json gets it.
ProcessIndex index_of_records(const std::vector<TraceRecord>& records);

}  // namespace ophook::cli
