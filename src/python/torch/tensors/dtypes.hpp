#pragma once
#include <cstddef>
#include <cstdint>

#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "torch/tensors/float_formats.hpp"

namespace ophook::py {

/// How tensors of one torch.dtype are described and saved. `dtype_id` names the torch dtype
/// without the "torch." prefix ("bfloat16"); the file holds `saved_item_size`-byte elements,
/// converted by `widen` when set (bfloat16/float8 → float32, complex32 → complex64), else the
/// source bytes as they are.
struct TorchDtype {
  std::uint32_t dtype_id = 0;
  std::uint32_t reason_id = 0;  // why tensors of this dtype get no data (quantized, sub-byte)
  std::size_t item_size = 0;
  std::size_t saved_item_size = 0;
  ElementWidener widen = nullptr;
  bool savable = false;
  bool complex = false;
  std::uint32_t kernel_kind = 0;  // device::statistics_kernel::ElementKind the device kernel reads, 0: none
};

/// The description of torch dtype object `dtype`, cached per object (torch dtypes are singletons).
/// nullptr, with no Python error set, when `dtype` is not a readable torch.dtype. GIL required;
/// may run Python (str(dtype), dtype.itemsize) on first sight only.
const TorchDtype* torch_dtype(core::Recorder& recorder, PyObject* dtype);

}  // namespace ophook::py
