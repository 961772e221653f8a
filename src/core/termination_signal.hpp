#pragma once

namespace ophook::core {

/// Lets a polite termination (SIGTERM, SIGHUP) end the recording properly before the process dies.
///
/// Python runs no atexit handler when a signal with the default disposition kills it, so a
/// `kill <pid>` would leave no summary.json and lose the queued records. For each of these signals
/// whose disposition is still SIG_DFL, a C-level handler is installed that does only
/// async-signal-safe work: it wakes a small watcher thread (a pipe), waits for it (poll, at most
/// kTerminationWaitMs) while the watcher runs `finish` (drain the queue, write summary.json), then
/// restores SIG_DFL and re-raises, so the process still dies of that signal with its usual status.
///
/// What the program sees does not change: this runs after the interpreter cached its view of the
/// dispositions, so signal.getsignal() still says SIG_DFL, and a handler the program installs
/// itself (signal.signal, sigaction) replaces this one. A disposition that is not SIG_DFL (SIG_IGN
/// from nohup, a handler) is left alone. A forked child inherits the handler; until it arms its own
/// watcher (with its own writer) the handler just re-raises.
///
/// Call from the process that owns the recorder's writer; idempotent per process. Not thread-safe
/// against itself (the recorder serialises writer creation).
void arm_termination_signals(void (*finish)() noexcept) noexcept;

/// How long the signalled thread waits for the output to be finished before dying anyway.
inline constexpr int kTerminationWaitMs = 10000;

}  // namespace ophook::core
