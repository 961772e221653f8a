#pragma once
#include <pybind11/pybind11.h>

namespace ophook::py {

/// Adds the torch part of the _ophook module (mode handlers, tensor capture, module tracking).
void bind_torch(pybind11::module_& m);

}  // namespace ophook::py
