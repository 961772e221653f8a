#pragma once

namespace ophook::py {

/// Registers with the core how to stop this Python program when a termination signal arrives:
/// the main thread stops at its next bytecode boundary, where it holds no lock but the GIL, and
/// stays there (with the GIL, so no Python thread runs) until the watcher ends the process.
void install_program_pause() noexcept;

/// Whether the interpreter runs: initialised and not finalising (no bytecode may run then).
bool interpreter_running() noexcept;

}  // namespace ophook::py
