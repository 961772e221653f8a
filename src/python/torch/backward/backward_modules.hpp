#pragma once
#include <cstdint>

#include "python_common.hpp"

namespace ophook::py::backward_modules {

/// Which module's gradient a backward op computes, as torch.utils.module_tracker knows it: a
/// module's forward registers, on the tensors it returns, a hook that fires when their first
/// gradient arrives (the module's backward starts: enter) and, on the tensors it was given, one
/// that fires when all their gradients are done (its backward ends: exit). This per-thread stack
/// of modules is what those hooks push and pop; it is emptied when the backward pass ends (a
/// callback queued on the autograd engine). GIL required.
///
/// The hooks are not torch's register_multi_grad_hook: its "all" mode keeps the tensors' grad_fns
/// in the hook that their grad_fns keep, a cycle through autograd's C++ nodes that Python's
/// collector cannot break, so every module forward with several layers would leave a few nodes and
/// objects behind for good (docs/performance.md, "Figures behind the code"). A
/// hook here holds only its module's name id and counts: its inputs' backward ends when as many
/// gradients as it hooked tensors have arrived in the pass. torch counts only the tensors the
/// pass will reach; a pass that reaches fewer (`inputs=`, an input that does not affect the loss)
/// leaves the module on the stack until its parent's exit or the pass's end.

/// Interned name id of the innermost module whose backward runs on this thread, 0 when none.
std::uint32_t current() noexcept;

/// The gradient hook to register on each of the `expected` tensors one forward of `module`
/// returned (entering) or was given (leaving).
PyObject* hook_for(PyObject* module, bool entering, std::uint32_t expected);

/// torch.autograd.Variable._execution_engine.queue_callback, to empty the stack at the end of
/// each backward pass, and torch._C._current_graph_task_id, to tell passes apart; nullptrs to
/// forget them.
void set_engine(PyObject* callback_queue, PyObject* current_graph_task_id);

}  // namespace ophook::py::backward_modules
