// os._exit() skips atexit, and multiprocessing's forked workers, DataLoader workers and many
// servers leave that way: records still queued would be lost. A preloaded library's _exit is the
// one the interpreter binds to, so the output is finished here first (by the core, when the stub
// has loaded it) and the real _exit follows. Part of the stub: libc only.
#include <dlfcn.h>

#include "preload_stub.hpp"

namespace {

using ExitFunction = void (*)(int);

[[noreturn]] void call_real(const char* name, int status) {
  auto real = reinterpret_cast<ExitFunction>(::dlsym(RTLD_NEXT, name));
  real(status);
  __builtin_unreachable();
}

}  // namespace

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (auto finish = ophook::preload::loaded_core_finish()) finish();
  call_real("_exit", status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  if (auto finish = ophook::preload::loaded_core_finish()) finish();
  call_real("_Exit", status);
}
