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

/// Interned name id of the innermost module whose backward runs on this thread, 0 when none.
std::uint32_t current() noexcept;

/// A builtin for register_multi_grad_hook: enter (or exit) the backward of `module`.
PyObject* hook_for(PyObject* module, bool entering);

/// torch.autograd.Variable._execution_engine.queue_callback, to empty the stack at the end of
/// each backward pass; nullptr to forget it.
void set_engine_callback_queue(PyObject* callable);

}  // namespace ophook::py::backward_modules
