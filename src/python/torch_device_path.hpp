#pragma once
#include <cstddef>
#include <string_view>

#include "ophook/record.hpp"
#include "python_common.hpp"
#include "torch_dtypes.hpp"

namespace ophook::py {

class ValueCapture;

/// The device path: reads a dense tensor through torch itself — every tensor on a device other
/// than the CPU, and every tensor under OPHOOK_TENSOR_COPY=torch — by the functions of
/// python_shim/ophook/_torch_device.py, which run with every torch mode, autograd and autocast
/// suspended. docs/devices.md says what is read how.

/// Loads the Python half. False when it cannot be loaded (torch too old): such tensors are then
/// described with a reason. GIL required; idempotent.
bool enable_device_path();

/// What reading a tensor through torch left to do.
struct TorchRead {
  PyRef pending;           // statistics queued on the device, for device_statistics::expect()
  std::size_t nbytes = 0;  // the tensor's bytes in its own dtype (the fingerprint covers them)
};

/// Reads `tensor` (dense, strided, of savable `dtype`; `out` has its shape, dtype and device)
/// as the mode asks: `dump` copies its elements into `out` (one synchronous copy to the host,
/// within OPHOOK_QUEUE_BYTES, bf16/fp8 widened as on the CPU); `stats` queues its statistics on
/// its device; OPHOOK_NAN in `trace` queues its NaN/Inf counts (floating dtypes only). A tensor
/// that cannot be read gets a reason instead (report_unread). GIL and a BusyScope held.
TorchRead read_through_torch(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype,
                             core::ArrayCapture& out);

/// For a DTensor: its local shard and the note its record carries; null when `tensor` has none.
PyRef local_shard(PyObject* tensor, std::string& note);

/// The result of `_torch_device.resolve` for one item: true, with the fields, for an Unread.
struct Unread {
  std::string reason, detail;
  bool out_of_memory = false;
};
bool as_unread(PyObject* result, Unread& out);

/// A tensor of `record` not read through torch: the reason goes into array `out`, the first such
/// failure of a run onto stderr, all of them into summary.json (notes.tensors_not_read).
void report_unread(const core::CallRecord& record, core::ArrayCapture& out, const Unread& unread);

/// Clears the Python error left by a failed call and describes it ("Type: message"), keeping a
/// KeyboardInterrupt for the program: it is raised again at the program's next bytecode.
std::string take_python_error();

/// _torch_device.resolve, or null before enable_device_path().
PyObject* resolve_function();

}  // namespace ophook::py
