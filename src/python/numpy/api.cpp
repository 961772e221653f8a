#define OPHOOK_NUMPY_API_OWNER
#include "python_common.hpp"

namespace ophook::py {
namespace {
bool ready = false;
}

bool ensure_numpy_api() noexcept {
  if (ready) return true;
  // import_array is a macro that returns on failure; _import_array reports through its result.
  if (_import_array() < 0) {
    PyErr_Clear();
    return false;
  }
  ready = true;
  return true;
}

bool numpy_api_ready() noexcept { return ready; }

}  // namespace ophook::py
