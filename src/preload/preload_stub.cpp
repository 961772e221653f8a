// libophook.so, the library LD_PRELOAD names. Every process started under it maps it (a build
// script or a shell pipeline: thousands of them), so it needs nothing beyond libc: no libstdc++,
// no core. Its constructor only asks whether this process is a Python interpreter that has not
// initialised yet; only then does it load libophook_core.so from its own directory and hand over.
// Built without exceptions, RTTI or any std:: type, and linked as C (see CMakeLists.txt).
#include "preload_stub.hpp"

#include "loaded_symbol.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace ophook::preload {
namespace {

FinishBeforeExitFunction core_finish = nullptr;  // set once the core is loaded

bool truthy_env(const char* name) {
  const char* v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

bool python_not_yet_initialised() {
  // PySys_AddAuditHook first: its absence alone marks a non-Python process, the common case, and
  // the hash tables tell it without a failed dlsym (loaded_symbol.hpp says why that matters).
  const SymbolPresence audit_hook = loaded_symbol_presence("PySys_AddAuditHook");
  if (audit_hook == SymbolPresence::absent) return false;
  if (audit_hook == SymbolPresence::unknown && dlsym(RTLD_DEFAULT, "PySys_AddAuditHook") == nullptr) return false;
  auto is_initialized = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  // Initialised already: dlopen()ed by a running program, not preloaded.
  return is_initialized != nullptr && is_initialized() == 0;
}

/// This library's resolved path (the bootstrap finds the ophook package beside it).
bool own_path(char (&out)[PATH_MAX]) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_path), &info) == 0 || info.dli_fname == nullptr) return false;
  if (realpath(info.dli_fname, out) == nullptr) snprintf(out, sizeof out, "%s", info.dli_fname);
  return true;
}

void warn_unhooked(const char* what, const char* detail) {
  fprintf(stderr, "[ophook] %s (%s): running unhooked\n", what, detail ? detail : "?");
}

void load_core(const char* stub_path) {
  char core_path[PATH_MAX];
  const char* slash = strrchr(stub_path, '/');
  const int dir_length = slash ? static_cast<int>(slash - stub_path) : 1;
  snprintf(core_path, sizeof core_path, "%.*s/%s", dir_length, slash ? stub_path : ".", kCoreLibraryName);
  // Lazy binding, as the program's own libraries get: RTLD_NOW would resolve every PLT slot of
  // libstdc++ and the core up front (about 1.5M instructions more per Python start).
  void* core = dlopen(core_path, RTLD_LAZY | RTLD_LOCAL);
  if (core == nullptr) return warn_unhooked("cannot load the ophook core", dlerror());
  auto attach = reinterpret_cast<AttachFunction>(dlsym(core, kAttachSymbol));
  auto finish = reinterpret_cast<FinishBeforeExitFunction>(dlsym(core, kFinishBeforeExitSymbol));
  if (attach == nullptr || finish == nullptr) return warn_unhooked("a foreign ophook core", core_path);
  __atomic_store_n(&core_finish, finish, __ATOMIC_RELEASE);
  attach(stub_path);
}

__attribute__((constructor)) void on_load() {
  if (truthy_env("OPHOOK_DISABLE") || !python_not_yet_initialised()) return;  // stay dormant
  char path[PATH_MAX];
  if (own_path(path)) load_core(path);
}

}  // namespace

FinishBeforeExitFunction loaded_core_finish() noexcept { return __atomic_load_n(&core_finish, __ATOMIC_ACQUIRE); }

}  // namespace ophook::preload
