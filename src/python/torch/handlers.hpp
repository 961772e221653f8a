#pragma once
#include <vector>

#include "ophook/model/record.hpp"
#include "python_common.hpp"
#include "thread_state.hpp"

namespace ophook::py {

/// The C++ bodies of ophook's torch modes. Each is the mode's `__torch_function__` /
/// `__torch_dispatch__` itself (a builtin bound to the mode instance, so torch calls C++ with no
/// Python frame in between): METH_FASTCALL arguments (func, types[, args[, kwargs]]), the mode
/// as `self`. Returns what func(*args, **kwargs) returns, recording the call
/// when recorder_for() says so. The op is resolved once per func object (torch_function: the
/// public name from the namer, e.g. "torch.nn.functional.linear"; torch_dispatch:
/// "aten.mm.default"), the phase is "backward" while autograd runs a backward pass on this thread,
/// the module is the innermost running nn.Module of this thread. GIL required.
namespace torch_handlers {

/// Python callables used on a func object's first sight: function_namer(func) -> str;
/// dispatch_namer(func) -> (str, callable to run the op with). Also finds how to tell a backward pass from `torch` (libtorch_symbols, else
/// torch._C._current_graph_task_id, else torch._C._current_autograd_node); false without any.
bool configure(PyObject* torch, PyObject* function_namer, PyObject* dispatch_namer);

/// OPHOOK_COMPILE=ignore: code objects of the frames through which torch.compile'd callables run
/// (Dynamo's compile_wrapper). A call made while one of them is on the thread's stack passes
/// through unrecorded. Empty (the default): everything is recorded.
void set_compiled_region_markers(const std::vector<PyObject*>& codes);

/// The training monitor's view of backward passes (python_shim/ophook/_monitor): observer(args) is
/// called with the arguments of each torch.Tensor.backward / torch.autograd.backward call the
/// torch_function level sees, before it runs (the loss is their first). None: no observer.
void set_backward_observer(PyObject* observer);

/// Drops the per-func caches (their op ids stay valid: ops are never unregistered).
void clear_caches();

/// The phase of a call made now on this thread: "backward" while autograd runs a backward pass
/// (its nodes, their hooks, the engine's final callbacks), "optimizer" inside optimizer.step(),
/// else "forward".
core::Phase current_phase(const ThreadState& state);

PyObject* on_torch_function(PyObject* mode, PyObject* const* args, Py_ssize_t nargs);
PyObject* on_torch_dispatch(PyObject* mode, PyObject* const* args, Py_ssize_t nargs);

}  // namespace torch_handlers
}  // namespace ophook::py
