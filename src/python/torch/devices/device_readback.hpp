#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ophook/capture/copy_memo.hpp"
#include "ophook/model/record.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "torch/devices/readback_entry.hpp"
#include "torch/tensors/float_formats.hpp"

/// The arrays of records being built or held that wait for what the device path (device_path.hpp)
/// queued on a tensor's device — a copy of a small tensor's bytes, or a larger tensor's
/// statistics — and their reading back: the statistics kernel's results (kernel_results.hpp) and,
/// for the rest, one call of torch per batch (torch_readback.hpp). The records themselves wait in
/// held_records.hpp. Every function needs the GIL, which also guards the lists kept here.
namespace ophook::py::device_readback {

/// Array `index` of `record` (being built) waits for `readback`.
void expect(core::CallRecord& record, std::uint32_t index, Readback readback);

/// Whether arrays of `record` wait for a read-back. A few loads when none does.
bool awaited(const core::CallRecord& record) noexcept;

/// `record`'s waiting arrays, in the order they were captured (none: an empty list).
const std::vector<Expected>& entries_of(const core::CallRecord& record);

/// Moves `record`'s waiting arrays out, in order.
std::vector<Expected> take_expected(const core::CallRecord& record);

/// The copies into a device's ring of `record`'s arrays (being captured) whose launch has not been
/// sent are not made (device::withdraw_ring_copy): its call outgrew OPHOOK_RING_BYTES.
void withdraw_ring_copies(const core::CallRecord& record);

/// Reads back what `batch` (taken out with take_expected) waits for into their records: the
/// kernel's results (waited for), then the rest in one call of torch per batch. May release the GIL.
void read_back(std::vector<Expected>& batch);

/// Reads back what `record`'s arrays wait for now (one synchronisation per device).
void resolve(core::CallRecord& record);

/// Drops what `record`'s arrays wait for, unread, giving their kernel slots back.
void drop_expected(const core::CallRecord& record) noexcept;

/// Bytes of the snapshots waiting, and how many waiting arrays torch (not the kernel) reads back:
/// the hold queue reads back early when they grow.
std::size_t snapshot_bytes_waiting() noexcept;
std::size_t torch_reads_waiting() noexcept;

/// In a forked child: the parent's waiting arrays are forgotten (their Python references leaked:
/// their tensors live on a device the child must not touch).
void forget_expected_after_fork() noexcept;

}  // namespace ophook::py::device_readback
