#pragma once
#include <chrono>

namespace ophook::core {

/// Lets a polite termination (SIGTERM, SIGHUP) end the recording properly before the process dies.
///
/// Python runs no atexit handler when a signal with the default disposition kills it, so a
/// `kill <pid>` would leave no summary.json and lose the queued records. For each of these signals
/// whose disposition is still SIG_DFL, a C-level handler is installed. It only wakes a small
/// watcher thread (a pipe) and returns at once: the thread it interrupted may hold a lock the
/// writer needs (malloc's arena lock, the queue's mutex), so it must not wait there. The watcher
/// then stops the program at a safe point (ProgramPause, set by the Python layer), runs `finish`
/// (drain the queue, write summary.json; .npy files only until kTerminationFilesMs), restores
/// SIG_DFL and re-raises, so the process still dies of that signal with its usual status — after
/// at most kTerminationWaitMs whatever happens to the writer.
///
/// What the program sees does not change: this runs after the interpreter cached its view of the
/// dispositions, so signal.getsignal() still says SIG_DFL, and a handler the program installs
/// itself (signal.signal, sigaction) replaces this one. A disposition that is not SIG_DFL (SIG_IGN
/// from nohup, a handler) is left alone. A forked child inherits the handler; until it arms its own
/// watcher (with its own writer) the handler just re-raises. A second termination signal during
/// the drain is absorbed: the process is already on its way out.
///
/// Call from the process that owns the recorder's writer; idempotent per process. Not thread-safe
/// against itself (the recorder serialises writer creation).
using TerminationFinish = void (*)(const char* signal_name,
                                   std::chrono::steady_clock::time_point files_deadline) noexcept;
void arm_termination_signals(TerminationFinish finish) noexcept;

/// How long after the signal the process dies at the latest.
inline constexpr int kTerminationWaitMs = 10000;
/// How long after the signal queued arrays are still written to .npy files.
inline constexpr int kTerminationFilesMs = 8000;
/// How long the watcher waits for the program to reach a safe point before finishing regardless.
inline constexpr int kTerminationPauseMs = 1000;

}  // namespace ophook::core
