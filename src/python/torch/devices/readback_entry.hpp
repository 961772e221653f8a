#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "device/engine/device_requests.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/model/record.hpp"
#include "python_common.hpp"
#include "torch/tensors/float_formats.hpp"

/// What an array of a record being built waits for from a tensor's device, and the entry that
/// ties it to its record (device_readback.hpp keeps those entries). GIL required.
namespace ophook::py::device_readback {

/// What one array waits for: the generic path's pending object, or the statistics kernel's slot.
struct Readback {
  PyRef pending;                   // from _torch.device.snapshot or .statistics; null: nothing
  device::Slot slot;    // queued for the statistics kernel
  bool bytes = false;              // a snapshot: its bytes go into the array's reserved buffer
  std::size_t nbytes = 0;          // the tensor's bytes in its own dtype (what the fingerprint covers)
  std::size_t count = 0;           // its elements
  std::size_t saved_nbytes = 0;    // its size in the file's dtype: of bytes copied or held in the device's ring
  ElementWidener widen = nullptr;  // bytes of bf16/fp8/complex32, widened for the file
  const void* address = nullptr;   // its bytes copied by the kernel, a tensor in C order: where it
                                   // lies on its device, under which an earlier copy may be shared
  std::shared_ptr<const core::SharedCopy> held_copy;  // the copy the device compared its bytes with
                                                      // (CopyRequest::held): its bytes if unchanged
  bool awaits() const { return pending || slot.valid(); }
  /// The kernel's copy of its bytes is lent to the array where it was staged (no buffer of the
  /// array's), large enough for shared copies; bytes to be widened are widened by the writer.
  bool lent() const { return nbytes >= core::kSharedCopyMinBytes; }
};

/// An array waiting for its read-back.
struct Expected {
  core::CallRecord* record;
  std::uint32_t index;
  Readback readback;
};

}  // namespace ophook::py::device_readback
