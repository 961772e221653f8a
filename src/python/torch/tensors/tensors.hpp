#pragma once
#include "python_common.hpp"

namespace ophook::py {

/// Enables capture of torch values in every recorded call (torch and NumPy alike): tensors as
/// array values — shape, dtype, device and, when the capture copies data, their elements read
/// straight from memory (data_ptr/stride, strided copy in C++, bf16/fp8 widened exactly), without
/// dispatching any aten op — torch.Size and torch.return_types as lists. Tensors whose memory
/// cannot be read here (other devices, sparse, quantized, nested, tensor subclasses with their
/// own __torch_dispatch__) are described without data, with a reason. `torch` is the imported
/// module. Returns false (Python error cleared) if torch lacks what capture needs. GIL required;
/// idempotent.
bool enable_torch_capture(PyObject* torch);

/// A new recording in this process: its first call that copies tensors notes torch's intra-op
/// thread count again (summary.json notes.torch_threads).
void forget_noted_torch_threads() noexcept;

}  // namespace ophook::py
