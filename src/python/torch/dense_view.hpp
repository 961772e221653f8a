#pragma once
#include <cstddef>
#include <cstdint>

#include "ophook/recorder.hpp"
#include "python_common.hpp"
#include "torch/dtypes.hpp"

namespace ophook::py {

/// A CPU tensor in strided layout as torch itself describes it: pointers into the tensor's own
/// sizes, strides and memory, valid while the tensor is alive and the GIL held.
struct DenseTensorView {
  const std::byte* data = nullptr;         // first element (storage offset applied)
  const std::int64_t* shape = nullptr;
  const std::int64_t* strides = nullptr;   // in elements
  std::size_t ndim = 0;
  const TorchDtype* dtype = nullptr;       // nullptr: several torch dtypes share the DLPack type
};

/// Finds torch's DLPack exchange API (torch._C._dlpack_exchange_api; recent torch has it) and learns the
/// DLPack type of every torch dtype. False when torch has none: tensors then take the attribute
/// path. Then reads tensors through torch_native's converter instead where it gives the
/// exporter's answers for an empty tensor of every dtype and two strided ones. GIL required;
/// creates those probe tensors, once.
bool enable_dense_views(core::Recorder& recorder, PyObject* torch);

/// Reads `tensor` (a torch._C.TensorBase whose type does not take over dispatch) through one C
/// call into torch: no Python attribute, no allocation. False, with no Python error left set, for anything
/// but a CPU tensor in strided layout — torch's exporter refuses sparse, nested, quantized, meta
/// and other devices. The view ignores the conjugate and negative bits: check them before reading
/// the elements.
bool read_dense_view(PyObject* tensor, DenseTensorView& out);

}  // namespace ophook::py
