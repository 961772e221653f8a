#pragma once
#include <string_view>

#include "ophook/export.hpp"

namespace ophook::core {

/// True for ops that return fresh, uninitialized memory: torch.empty, empty_like,
/// empty_strided, Tensor.new_empty, aten.empty.memory_format, numpy.empty_like, ... Their
/// contents are whatever the allocator hands out (nn.Module constructors call them before their
/// initialisers fill the tensors), so a NaN in them is no finding and a difference between two
/// runs is no regression. Pure.
OPHOOK_API bool returns_uninitialized_memory(std::string_view op);

}  // namespace ophook::core
