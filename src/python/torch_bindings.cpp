#include "torch_bindings.hpp"

namespace ophook::py {

void bind_torch(pybind11::module_&) {}

}  // namespace ophook::py
