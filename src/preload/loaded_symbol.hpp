#pragma once

namespace ophook::preload {

enum class SymbolPresence { absent, present, unknown };

/// Whether an object mapped in this process defines the dynamic symbol `name`, read from each
/// object's GNU hash table as the dynamic linker reads it. `unknown` when an object has no GNU
/// hash table (only the old SysV one): ask dlsym then. No allocation and no system call, which
/// matters in the stub's constructor: a failed dlsym allocates its error message, and in a
/// process that has not called malloc yet (/bin/true) that first allocation sets up the heap
/// (getrandom, two brk), a third of what preloading the stub costs such a process.
SymbolPresence loaded_symbol_presence(const char* name) noexcept;

}  // namespace ophook::preload
