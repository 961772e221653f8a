#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/model/record.hpp"
#include "python_common.hpp"
#include "torch/devices/readback_entry.hpp"
#include "torch/tensors/dtypes.hpp"
#include "torch/torch_device_module.hpp"

namespace ophook::py {

class ValueCapture;

/// The device path: reads a dense tensor through torch itself — every tensor on a device other
/// than the CPU, and every tensor under OPHOOK_TENSOR_COPY=torch — by the functions of
/// python_shim/ophook/_torch/device.py, which run with every torch mode, autograd and autocast
/// suspended. docs/devices.md says what is read how.

/// Loads the Python half. False when it cannot be loaded (torch too old): such tensors are then
/// described with a reason. GIL required; idempotent.
bool enable_device_path();

/// Reads `tensor` (dense, strided, of savable `dtype`; `out` has its shape, dtype and device)
/// as the mode asks. In `stats` mode, and for OPHOOK_NAN's counts in `trace`, a CUDA tensor of a
/// dtype the statistics kernel reads and without a conjugate or negative bit (`lazy_bits`) is
/// queued for the kernel (device_statistics) instead. Otherwise a tensor of up to 256 KiB is snapshot on its device (one kernel) into a
/// buffer reserved in `out`, within OPHOOK_QUEUE_BYTES, and brought to the host later with others
/// (device_readback): `stats` and `dump` then treat it as a CPU array. A larger one in `dump` mode
/// is copied into `out` at once (one synchronous copy); in `stats` mode its statistics are
/// queued on its device. OPHOOK_NAN in `trace` mode reads floating tensors only, their NaN/Inf
/// counts when large. bf16/fp8 are widened as on the CPU. A tensor that cannot be read gets a
/// reason instead (report_unread). Returns what `out` waits for, once it is in the record
/// (device_readback::expect). GIL and a BusyScope held.
device_readback::Readback read_through_torch(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype,
                                             core::ArrayCapture& out, bool lazy_bits);

}  // namespace ophook::py
