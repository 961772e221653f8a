// os._exit() skips atexit, and multiprocessing's forked workers, DataLoader workers and many
// servers leave that way: records still queued would be lost. A preloaded library's _exit is the
// one the interpreter binds to, so the output is finished here first and the real _exit follows.
#include <dlfcn.h>

#include "ophook/recorder.hpp"

namespace {

using ExitFunction = void (*)(int);

[[noreturn]] void call_real(const char* name, int status) {
  auto real = reinterpret_cast<ExitFunction>(::dlsym(RTLD_NEXT, name));
  real(status);
  __builtin_unreachable();
}

}  // namespace

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  ophook::core::Recorder::finish_before_exit();
  call_real("_exit", status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  ophook::core::Recorder::finish_before_exit();
  call_real("_Exit", status);
}
