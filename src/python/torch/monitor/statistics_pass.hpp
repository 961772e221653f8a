#pragma once
// The training monitor's statistics of CPU float32/float64 tensors in C++ (core's norms.hpp), one
// pass per array: after a step, each parameter's weight, gradient and update (the weights kept for
// the next step's update in the same pass, the GIL released while they run); a module's output
// and the gradient it gets back. What these cannot read
// (another device or dtype, a strided tensor) the shim computes with torch's multi-tensor ops.
#include <pybind11/pybind11.h>

namespace ophook::py::monitor {

/// For each parameter: (weight, gradient or None, weights before the step or None), detached
/// tensors. Returns, per parameter, None where one of them cannot be read here, else a tuple
/// (weight's (Σx², min, max, nan, inf), the gradient's or None, Σ(before − weight)² or None);
/// the weights are copied into `before` once read. GIL required.
pybind11::list parameter_statistics(const pybind11::list& weights, const pybind11::list& grads,
                                    const pybind11::list& befores);

/// (Σx², min, max, nan, inf) of a detached tensor, or None where it cannot be read here. GIL
/// required (held: a module's output is small, and read on the program's thread anyway).
pybind11::object tensor_statistics(pybind11::handle tensor);

}  // namespace ophook::py::monitor
