#define OPHOOK_NUMPY_API_OWNER
#include "python_common.hpp"

#include "numpy/arrays.hpp"
#include "recording/value_capture.hpp"

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
  set_numpy_capturer(&capture_numpy_value);  // only now may NumPy's arrays be read
  return true;
}

}  // namespace ophook::py
