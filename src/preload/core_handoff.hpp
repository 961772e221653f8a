#pragma once

/// What passes between libophook.so (the preloaded stub, which needs nothing but libc) and
/// libophook_core.so (everything else), which the stub loads from its own directory only into a
/// Python interpreter. The stub finds the two entry points with dlsym, so neither library links
/// the other.
namespace ophook::preload {

inline constexpr char kCoreLibraryName[] = "libophook_core.so";

/// `void ophook_preload_attach(const char* stub_path)`: called once from the stub's constructor,
/// before the interpreter initialises; arranges for the bootstrap to run (preload_entry.cpp).
inline constexpr char kAttachSymbol[] = "ophook_preload_attach";
using AttachFunction = void (*)(const char* stub_path);

/// `void ophook_preload_finish_before_exit()`: called by the stub's _exit/_Exit interposers.
inline constexpr char kFinishBeforeExitSymbol[] = "ophook_preload_finish_before_exit";
using FinishBeforeExitFunction = void (*)();

}  // namespace ophook::preload
