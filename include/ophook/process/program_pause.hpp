#pragma once
#include "ophook/export.hpp"

namespace ophook::core {

/// Stops the observed program where it holds no lock of its own (for Python: the main thread, at
/// the next bytecode boundary, keeping the GIL) and keeps it stopped for good. Waits at most
/// `timeout_ms` for that; true once the program has stopped. Called on the termination watcher
/// thread, never in a signal handler. `signal` names the termination signal ("SIGTERM").
using ProgramPause = bool (*)(int timeout_ms, const char* signal) noexcept;

/// Registers how to stop the program when a termination signal arrives (see
/// termination_signal.hpp); without one the output is finished while the program runs on.
OPHOOK_API void set_program_pause(ProgramPause pause) noexcept;

}  // namespace ophook::core
