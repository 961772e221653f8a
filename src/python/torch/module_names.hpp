#pragma once
#include <cstdint>

#include "python_common.hpp"

namespace ophook::py {

/// The names of nn.Modules: a module's dotted path ("MLP.fc1", as torch.utils.module_tracker
/// names them) is computed once by the Python namer given to set_module_namer, interned by the
/// recorder and cached per module object until it dies. All functions need the GIL.
namespace module_names {

/// Python callable namer(module) -> str, called on a module's first forward.
void set_module_namer(PyObject* callable);

/// The interned name id of `module` (named on first sight), 0 when it cannot be named.
std::uint32_t name_id(PyObject* module);

/// Forgets cached names (e.g. at uninstall); stacks of running forwards are kept.
void clear_names();

}  // namespace module_names
}  // namespace ophook::py
