#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "device/engine/device_requests.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/model/record.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "torch/tensors/float_formats.hpp"

/// What the device path (torch_device_path) queued on a tensor's device — a copy of a small
/// tensor's bytes, or a larger tensor's statistics — read back to the host later: a record whose
/// arrays wait for it is held by the program's side, with up to 63 other such records, so that the
/// device is synchronised once per batch instead of once per op (docs/devices.md). Every function
/// needs the GIL, which also guards the lists kept here.
namespace ophook::py::device_readback {

/// What one array waits for: the generic path's pending object, or the statistics kernel's slot.
struct Readback {
  PyRef pending;                   // from _torch_device.snapshot or .statistics; null: nothing
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

/// Array `index` of `record` (being built) waits for `readback`.
void expect(core::CallRecord& record, std::uint32_t index, Readback readback);

/// The copies into a device's ring of `record`'s arrays (being captured) whose launch has not been
/// sent are not made (device::withdraw_ring_copy): its call outgrew OPHOOK_RING_BYTES.
void withdraw_ring_copies(const core::CallRecord& record);

/// Whether arrays of `record` wait for a read-back. A few loads when none does.
bool awaited(const core::CallRecord& record) noexcept;

/// Launches the statistics kernel over the tensors queued so far (device_statistics): after a
/// call's inputs when it may write into them, and after its outputs.
void launch_queued();

/// Reads back what `record`'s arrays wait for now (one synchronisation per device): OPHOOK_NAN
/// checks the call before the program goes on. Held records stay held: a caller that finds the
/// call a culprit judges them first (resolve_held), since an earlier call may be the first.
void resolve(core::CallRecord& record);

/// OPHOOK_NAN=warn: when every array `record` waits for waits for the statistics kernel, keeps
/// the check's facts with it and returns true: the record, held, is judged (fresh_nonfinite) when
/// its results arrive, oldest first, so the first culprit is still the first judged. A
/// `check_only` record (a call no level records) is then written, given its seq, only if it is the
/// culprit. False otherwise: the caller checks now.
bool check_later(core::CallRecord& record, std::size_t first_output, std::optional<bool> inputs_nonfinite_before,
                 bool check_only);

/// Drops what `record`'s arrays wait for, unread: a record going back unwritten (a CheckOnly call
/// that was no culprit or raised) must leave no entry that its next use would take for its own.
void forget(const core::CallRecord& record) noexcept;

/// Holds a finished `record` whose arrays wait for a read-back. Held records whose arrays wait
/// only for the statistics kernel are submitted, in order, as their results arrive (checked at
/// each defer, no waiting), and waited for only when 1024 are held. Others: every held record is
/// read back and submitted once 64 are held, the oldest was held for 0.1 s or the held snapshots
/// reach 16 MiB. In `trace` mode (read only for OPHOOK_NAN's check) the record goes at once.
void defer(core::Recorder& recorder, core::RecordPtr record);

/// Reads back what every held record waits for and submits them: at ophook.flush(), at the end
/// of a run and at exit, before the program pauses for a termination signal.
void resolve_held();

/// Registers this path's functions with the recording layer (recording/device_reads.hpp): done
/// when torch's device path is enabled.
void register_with_recording() noexcept;

/// The recorder's exit hook (os._exit: forked and DataLoader workers leave that way): resolve_held()
/// when the exiting thread holds the GIL of a running interpreter; otherwise the held records are
/// counted as dropped. Registered by enable_device_path().
void resolve_held_before_exit() noexcept;

}  // namespace ophook::py::device_readback
