#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::cli {

/// One process's output directory within a run (docs/outputs.md, "Where"): the root writes into
/// the run directory itself, other processes into rank<R>/ or pid<PID>/ below it.
struct ProcessDir {
  enum class Kind : std::uint8_t { Root, Rank, Pid };
  Kind kind = Kind::Root;
  std::int64_t number = 0;  // R of rank<R>, PID of pid<PID>; 0 for the root
  std::string name;         // "root", "rank1", "pid4242"
  std::filesystem::path dir;
  /// When the process began (summary.json's start_t_ns, else its first record's t_ns): the
  /// order in which pid<PID> directories are listed and paired.
  std::optional<std::int64_t> start_t_ns;
};

/// Whether `a` started before `b`: known starts first, in start order, then by number (pid).
bool started_before(const ProcessDir& a, const ProcessDir& b);

/// The processes of the run in `run_dir`, the one reading of a run's layout that `report`,
/// `compare` and `replay` share: the root (always, first) and every rank<R> or pid<PID>
/// subdirectory that holds a trace.jsonl, ranks by R, then pids by start. A subdirectory whose
/// summary.json names a root pid other than the root's is left from an earlier run into the same
/// directory (a run never deletes directories): skipped with a warning, as is a process
/// directory without trace.jsonl. `role` ("BASE", "NEW"), when not empty, starts each warning.
/// Reads only the summary.json files (on every core) and the first line of a trace.jsonl that has
/// no summary.
struct ProcessScan {
  /// A directory holding only its summary.json counts too (its index is what `report` merges:
  /// docs/ranks.md, "Thousands of ranks").
  bool summary_suffices = false;
  std::vector<std::string>* stale = nullptr;  // when given, gets the names of the directories an earlier run left
};
std::vector<ProcessDir> find_processes(const std::filesystem::path& run_dir, std::string_view role,
                                       std::vector<std::string>& warnings, const ProcessScan& scan = {});

}  // namespace ophook::cli
