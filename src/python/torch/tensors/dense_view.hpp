#pragma once
#include <cstddef>
#include <cstdint>

#include <dlpack/dlpack.h>

#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "torch/tensors/dtypes.hpp"

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
/// path. Then reads tensors through libtorch_symbols's converter instead where it gives the
/// exporter's answers for an empty tensor of every dtype and two strided ones. GIL required;
/// creates those probe tensors, once.
bool enable_dense_views(core::Recorder& recorder, PyObject* torch);

/// Reads `tensor` (a torch._C.TensorBase whose type does not take over dispatch) through one C
/// call into torch: no Python attribute, no allocation. False, with no Python error left set, for anything
/// but a CPU tensor in strided layout — torch's exporter refuses sparse, nested, quantized, meta
/// and other devices. The view ignores the conjugate and negative bits: check them before reading
/// the elements.
bool read_dense_view(PyObject* tensor, DenseTensorView& out);

/// The torch dtype of the DLPack type `type` (null when several torch dtypes share it: ask the
/// tensor); false when no torch dtype has it.
bool dtype_of(DLDataType type, const TorchDtype*& dtype);

/// torch's DLTensor for `tensor` on any device (the device path's native reads): pointers into
/// the tensor, valid while it lives and the GIL is held. False, with no Python error left set,
/// when torch refuses it or has no exchange API; the conjugate and negative bits are not looked at.
bool read_any_device_view(PyObject* tensor, DLTensor& out);

/// The stream torch queues work on now for the device (`device_type`, `device_id`), through the
/// exchange API's current_work_stream. False when there is none to ask.
bool current_work_stream(int device_type, int device_id, void*& stream);

}  // namespace ophook::py
