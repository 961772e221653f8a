#pragma once

namespace ophook::preload {

/// True when CPython will switch to a debug memory allocator during initialisation
/// (PYTHONMALLOC=*debug*, PYTHONDEVMODE, -X dev). An audit hook registered before initialisation is
/// then freed by the wrong allocator at exit and CPython aborts, so the preload must not register
/// one. Reads the environment and /proc/self/cmdline; call from the constructor only.
bool python_will_use_debug_allocator();

}  // namespace ophook::preload
