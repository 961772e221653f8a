#pragma once
#include "python_common.hpp"
#include "thread_state.hpp"

namespace ophook::py::import_guard {

/// OPHOOK_IMPORTS=0: calls made while a module is being imported are set-up, not the program's
/// work. Replaces importlib's _find_and_load in `bootstrap` (the frozen importlib module, which
/// the interpreter's import statement looks it up in at every import) by a C function that counts
/// the imports in progress on each thread around the original: no Python frame is added, so
/// tracebacks are unchanged. Imports already in progress when it is installed (the framework
/// import that started the recording, and whatever imports that one) are known by their module
/// spec's `_initializing` flag until they finish. GIL required.
void install(PyObject* bootstrap);

/// Puts the original back (when the attribute is still ours).
void uninstall();

/// Whether an import is in progress on this thread (`state` is the caller's).
inline bool importing(ThreadState& state);

namespace detail {
inline bool g_in_flight = false;  // imports from before install() may still be running
bool any_in_flight();
}  // namespace detail

inline bool importing(ThreadState& state) {
  return state.importing > 0 || (detail::g_in_flight && detail::any_in_flight());
}

}  // namespace ophook::py::import_guard
