#pragma once
#include <string_view>

#include "ophook/export.hpp"
#include "ophook/model/record.hpp"

namespace ophook::core {

/// True for ops that return fresh, uninitialized memory: torch.empty, empty_like,
/// empty_strided, Tensor.new_empty, aten.empty.memory_format, numpy.empty_like, ... Their
/// contents are whatever the allocator hands out (nn.Module constructors call them before their
/// initialisers fill the tensors), so a NaN in them is no finding and a difference between two
/// runs is no regression. Pure.
OPHOOK_API bool returns_uninitialized_memory(std::string_view op);

/// True for calls that compute nothing: attribute access (torch.Tensor.grad.__get__, __set__,
/// __delete__) and metadata queries (torch.Tensor.dim, size, numel, stride, data_ptr,
/// torch.is_complex, aten.sym_size, prim.device, numpy.shape, numpy.can_cast, ...), and
/// bookkeeping (the profiler's record_function ranges, grad-mode switches); the list is in
/// docs/torch.md. Recorded only with OPHOOK_ACCESSORS=1. Pure.
OPHOOK_API bool is_metadata_query(std::string_view op);

/// True for ops that may write into their arguments whatever the call passes: every NumPy array
/// function (np.copyto, np.put, np.fill_diagonal, ...: judged so to be safe), and torch ops named
/// in place - in-place methods and functions (torch.Tensor.add_, torch.nn.init.normal_,
/// aten.add_.Tensor, aten._foreach_mul_.List), in-place operators (torch.Tensor.__iadd__,
/// __setitem__) and aten out= overloads (aten.add.out, aten.max.dim_max). A ufunc writes into an
/// argument only as the call says (out=, positional outputs, ufunc.at), which the capture sees.
/// OPHOOK_NAN judges the inputs of such calls before they run. Pure.
OPHOOK_API bool writes_into_arguments(std::string_view op, Level level);

}  // namespace ophook::core
