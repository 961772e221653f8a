#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::cli {

/// One process's output directory within a run (docs/outputs.md, "Where"): the root writes into the
/// run directory itself, other processes into rank<R>/ or pid<PID>/ below it.
struct ProcessDir {
  enum class Kind : std::uint8_t { Root, Rank, Pid };
  Kind kind = Kind::Root;
  std::int64_t number = 0;  // R of rank<R>, PID of pid<PID>; 0 for the root
  std::string name;         // "root", "rank1", "pid4242"
  std::filesystem::path dir;
  /// When the process began (summary.json's start_t_ns, else its first record's t_ns): the
  /// order in which pid<PID> directories are paired.
  std::optional<std::int64_t> start_t_ns;
};

/// The processes of the run in `run_dir`: the root (always, first) and every rank<R> or pid<PID>
/// subdirectory that holds a trace.jsonl, ranks by R, pids by start. A subdirectory whose
/// summary.json names a root pid other than the root's is left from an earlier run into the same
/// directory (a run never deletes directories): skipped with a warning, as is a process
/// directory without trace.jsonl. `role` ("BASE", "NEW") starts each warning. Reads only the
/// summary.json files and the first line of a trace.jsonl that has no summary.
std::vector<ProcessDir> find_processes(const std::filesystem::path& run_dir, std::string_view role,
                                       std::vector<std::string>& warnings);

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
