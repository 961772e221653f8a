#pragma once

namespace ophook::cli {

/// Exit statuses of the ophook command (docs/reference.md, "Commands"). `run` passes the child's status
/// through instead, with the shell's conventions for the cases where there is no child status.
inline constexpr int kExitOk = 0;
inline constexpr int kExitDifferent = 1;        // compare: differences or unmatched calls
inline constexpr int kExitUsage = 2;            // bad arguments or unreadable/invalid input
inline constexpr int kExitIncomplete = 3;       // report: ranks missing, partial or stale; the rest analysed
inline constexpr int kExitNotExecutable = 126;  // run: CMD exists but cannot be executed
inline constexpr int kExitNotFound = 127;       // run: CMD not found
inline constexpr int kExitSignalBase = 128;     // run: child killed by signal N → 128 + N

}  // namespace ophook::cli
