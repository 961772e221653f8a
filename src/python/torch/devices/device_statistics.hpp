#pragma once
#include <cstdint>
#include <functional>

#include <dlpack/dlpack.h>

#include "device/engine/device_requests.hpp"

/// Torch's side of the device statistics engine (src/device, docs/devices.md "Statistics on a
/// CUDA device"): a call's tensors, described by torch's DLPack exchange, are queued on their
/// device's engine as they are captured and summarised by one kernel launch on torch's current
/// stream (device::launch_queued, after the call; before it too when the call may write into its
/// inputs). Each result lands in host memory; nothing waits on the program's thread until a result
/// is wanted. CUDA devices go through the driver API and NVRTC, loaded when the first CUDA tensor
/// is read; OPHOOK_TENSOR_COPY=fake-device sends CPU tensors to the fake device instead. Every
/// function needs the GIL, which serialises the engines' calls.
namespace ophook::py::device_statistics {

/// Queues the statistics of the tensor `view` (elements of kernel kind `kind`) and the copy of
/// its bytes in C order that `copy` asks for; `slot` says where its result will be and whether
/// the bytes went to the ring. `fake`: a CPU tensor for the fake device.
device::Queued queue(const DLTensor& view, std::uint32_t kind, bool fake, const device::CopyRequest& copy,
                     device::Slot& slot);

/// `dump`, after Queued::StagingFull: waits, the GIL released, until the staging memory of
/// `view`'s device has room for `bytes`, while `more_coming()` says records holding some of it are
/// still to be written (counted in device::costs()). False when it has none and none is coming.
bool wait_for_staging(const DLTensor& view, bool fake, std::uint64_t bytes, const std::function<bool()>& more_coming);

/// Whether the result of `slot` is there (no waiting; device::wait waits for it). A launch that
/// copies no bytes says so by the stamps beside its results, asked of no driver; one that copies,
/// by its event, not asked while a CUDA graph is being captured on a current stream (may_poll):
/// it is not ready then.
bool ready(device::Slot slot);

/// Whether events may be asked about now: not while a CUDA graph is being captured on torch's
/// current stream of a device, where querying an event could invalidate the program's capture.
bool may_poll();

}  // namespace ophook::py::device_statistics
