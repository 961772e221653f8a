#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "read/process_index.hpp"
#include "read/trace_model.hpp"

namespace ophook::cli {

/// Where the replicas of a process group parted (docs/ranks.md, "Replicas checked"): the parting
/// the ranks' summary.json files name and, from the records of a rank that parted and of one that
/// held the value most held, over the steps since the last check that agreed, the first call only
/// the parted rank made that could have written an array (one with an array output: an `item()`
/// that logs the loss on one rank does not count; with no value held by most, either rank's), and
/// the first call whose array inputs agree between the two and whose
/// outputs do not (a kernel's non-determinism, a corrupted rank) or, for a collective whose
/// outputs every member holds alike (all-reduce, broadcast, all-gather), whose outputs do not (a
/// communication fault).
struct ReplicaParting {
  ProcessIndex::ReplicasParted parted;
  /// The two processes (indices into the run's processes) whose records are compared: the first
  /// rank that parted and the first that held the common value (with two ranks, the other one).
  std::optional<std::size_t> parted_process, agreeing_process;
  std::int64_t from_step = 0;  // the steps looked into: from_step .. parted.step
  bool compared = false;       // both processes' records were read and compared
  std::size_t values = 0;      // calls of those steps with an array compared by value
  std::optional<TraceRecord> only_one;  // the first call only one of the two made (see above)
  bool only_one_by_parted = true;       // made by the parted rank, else by the other one
  std::optional<TraceRecord> first_apart;  // the parted rank's record of the first call apart
  bool collective = false;                 // first_apart is a collective whose outputs disagree
  std::vector<std::string> reasons;        // why first_apart's values differ
};

/// The rank `parted` names first among those that parted, and the one it compares with.
std::optional<std::int64_t> parted_rank(const ProcessIndex::ReplicasParted& parted);
std::optional<std::int64_t> agreeing_rank(const ProcessIndex::ReplicasParted& parted);

/// Fills the calls of `parting` from its two processes' records (any order), read from their
/// directories `parted_dir` and `agreeing_dir` (for .npy files). Pure but for the file reads.
void find_where_replicas_part(ReplicaParting& parting, const std::vector<TraceRecord>& parted,
                              const std::filesystem::path& parted_dir,
                              const std::vector<TraceRecord>& agreeing,
                              const std::filesystem::path& agreeing_dir);

}  // namespace ophook::cli
