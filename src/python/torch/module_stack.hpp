#pragma once
#include <cstdint>
#include <string>

#include "ophook/model/record.hpp"
#include "python_common.hpp"

namespace ophook::py {

/// The nn.Module whose forward is running, per thread: torch's global forward pre-hook pushes
/// the module, its global forward hook (registered with always_call=True) pops it. Modules are
/// named by module_names.hpp.
/// All functions need the GIL.
namespace module_stack {

/// Interned name id of the innermost running module on this thread, 0 when none: in a backward
/// pass the module whose forward the running op differentiates (backward_modules), else the
/// module whose forward runs.
std::uint32_t current_module_id(core::Phase phase) noexcept;

/// Backward module attribution (torch/backward_modules.hpp): at each forward's start and end the
/// hooks call tracker(module, args_or_output, is_output) under a BusyScope, and the tracker
/// registers the gradient hooks that enter and leave the module's backward. nullptr: off.
void set_backward_tracker(PyObject* tracker);

/// OPHOOK_MODULES: only calls made inside a module whose dotted path matches `pattern`
/// (searched) are recorded; "" records every call. The verdict is cached per module name.
void set_module_filter(const std::string& pattern);
/// Whether a call made inside module `id` (0: outside any module) may be recorded.
bool module_selected(std::uint32_t id);

/// torch.jit cannot trace through a TorchDispatchMode, nor run every traced graph under one. The
/// module hooks call guard(module, entering) -> bool when a forward starts while probe()
/// (torch._C._get_tracing_state) returns a state or the module is a `traced_type`
/// (torch.jit.TracedModule), and at every forward's start and end for as long as the guard's
/// last answer was True (on this thread). The guard takes the dispatch mode off the stack and
/// puts it back. nullptrs switch this off.
void set_jit_guard(PyObject* probe, PyObject* traced_type, PyObject* guard);

/// METH_FASTCALL bodies for the hooks: pre(module, args) and post(module, args, [kwargs,] output).
/// Both return None.
PyObject* forward_pre_hook(PyObject* self, PyObject* const* args, Py_ssize_t nargs);
PyObject* forward_hook(PyObject* self, PyObject* const* args, Py_ssize_t nargs);

}  // namespace module_stack
}  // namespace ophook::py
