#pragma once
#include "python_common.hpp"

namespace ophook::py {

class ValueCapture;

/// Captures a NumPy ndarray (any subclass) or NumPy scalar as an array value: shape, dtype and,
/// when the capture copies data, its elements in C order. Object, structured and other dtypes that
/// cannot be saved without pickle are described without data. False when `object` is neither.
/// Requires NumPy's C API (ensure_numpy_api).
bool capture_numpy_value(ValueCapture& capture, PyObject* object);

}  // namespace ophook::py
