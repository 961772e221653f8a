#pragma once
#include <dlfcn.h>

namespace ophook::device {

/// The function `name` of the dlopen'd `library` into `slot` (a function pointer of its type);
/// false when the library lacks it. The driver and NVRTC are found so, never linked.
template <typename F>
bool find_symbol(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(library, name));  // dlsym's result is the function
  return slot != nullptr;
}

}  // namespace ophook::device
