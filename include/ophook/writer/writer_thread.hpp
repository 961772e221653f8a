#pragma once

namespace ophook::core {

/// Where a run's writer does its work. Inline: no thread and no termination-signal watcher;
/// finishing writes everything on the caller's thread — for a run that is over before it starts
/// (the root of a run that imported no framework writes its empty output at exit). Records
/// submitted before that are written too, but nothing drains the queue until then: an inline run
/// must not flush() or submit more than the queue holds.
enum class WriterThread : bool { Start, Inline };

}  // namespace ophook::core
