#pragma once
#include "ophook/export.hpp"

namespace ophook::core {

/// Which rank a process records as (docs/outputs.md, "Where"): its own — RANK at its start, or a
/// rank learned later (torch.distributed initialised, RANK set by the program itself) — never the
/// one it inherited from the recorded process that started it: a DataLoader worker or a subprocess
/// of rank R has RANK=R in its environment too, and must write pid<PID>/, not over rank R's files.
/// A process that knows its rank exports it as OPHOOK_HELD_RANK, so that the processes it execs
/// tell an inherited RANK from their own; a fork child knows its parent's from memory.
/// Not thread-safe: the recorder guards it.
class OPHOOK_API ProcessRank {
 public:
  static constexpr const char* kHeldRankVar = "OPHOOK_HELD_RANK";

  /// RANK as a number, or -1 when it is unset or not a number.
  static long from_environment() noexcept;

  /// At the start of recording: RANK is this process's own unless OPHOOK_HELD_RANK says that a
  /// process above holds it. A rank known already (a later run of the same process) stays.
  void at_start();
  /// In a fork child: the parent's rank, known or still only in RANK, is the parent's.
  void at_fork_child() noexcept;
  /// `rank` (-1: none) learned after the start. True when it is this process's own and was not
  /// known before; `export_it` then exports it (not at the process's end: setenv would race the
  /// program's threads' getenv for nobody to read it).
  bool learn(long rank, bool export_it);
  /// This process's rank, or -1 while it is unknown.
  long own() const noexcept { return own_; }

 private:
  long own_ = -1;
  long inherited_ = -1;  // the rank of the process this one descends from, -1 for none
};

}  // namespace ophook::core
