#pragma once
#include <dlpack/dlpack.h>

#include "python_common.hpp"

namespace ophook::py::libtorch_symbols {

/// Two functions of torch's own C++ library, called directly on the hot path instead of through
/// Python or torch's DLPack exchange API. ophook neither includes torch's headers nor links
/// against torch: both are found by their symbol names in the libraries torch._C loaded, and each
/// one's signature is a plain pointer or integer one, so that nothing but the symbol has to match.
///
/// - at::toDLPackNonOwning(const at::Tensor&, DLTensor*): the converter inside torch's exporter.
///   The exporter's way in (pybind11's caster copies the at::Tensor, and a copy of a tensor that
///   Python owns makes torch take the GIL to increment the Python object) costs more than the
///   conversion. Called on the at::Tensor inside the Python object, where THPVariable keeps it
///   right after the object header. Only used where TensorBase has exactly that size; the caller
///   checks the results against the exporter before relying on them.
/// - torch::autograd::get_current_graph_task_id(): -1 unless autograd runs a backward pass on this
///   thread (its nodes, hooks and final callbacks), where torch._C._current_autograd_node costs a
///   Python call and a warning handler.
///
/// Finds both in the libraries of torch._C (no-op when already found). False for either when
/// torch lacks it; callers then keep the Python way. GIL required.
void find(PyObject* torch);

/// Whether describe_tensor can be used (to be confirmed against torch's exporter by the caller).
bool has_tensor_converter();

/// torch's DLTensor for `tensor`, which must be a torch._C.TensorBase instance; pointers into the
/// tensor, valid while it lives and the GIL is held. False when torch refuses it (sparse, bit
/// dtypes …).
bool describe_tensor(PyObject* tensor, DLTensor& out) noexcept;

/// Whether get_current_graph_task_id was found.
bool has_graph_task_id();

/// True while autograd runs a backward pass on this thread. Only after has_graph_task_id().
bool in_backward_pass() noexcept;

/// Tests: forget what was found and find nothing more, so that capture takes the paths torch
/// releases without these symbols take.
void disable();

}  // namespace ophook::py::libtorch_symbols
