#pragma once
#include <cstddef>
#include <cstdint>

#include "ophook/record.hpp"
#include "ophook/recorder.hpp"
#include "python_common.hpp"

/// Statistics queued on a tensor's device (torch_device_path) and read back later: a record whose
/// arrays wait for them is held by the program's side until they are read, with up to 63 other
/// such records, so that the device is synchronised once per batch instead of once per op
/// (docs/devices.md). Every function needs the GIL, which also guards the lists kept here.
namespace ophook::py::device_statistics {

/// Array `index` of `record` (being built) waits for `pending` (from _torch_device.statistics),
/// the statistics of a tensor of `nbytes` bytes.
void expect(core::CallRecord& record, std::uint32_t index, PyRef pending, std::size_t nbytes);

/// Whether arrays of `record` wait for statistics. A few loads when none does.
bool awaited(const core::CallRecord& record) noexcept;

/// Reads `record`'s statistics now (one synchronisation per device): OPHOOK_NAN checks the call
/// before the program goes on.
void resolve(core::CallRecord& record);

/// Holds a finished `record` whose statistics are still on the device; reads the statistics of
/// every held record and submits them all once 64 are held or the oldest was held for 0.1 s.
/// In `trace` mode (statistics asked only for OPHOOK_NAN's check) the record goes at once.
void defer(core::Recorder& recorder, core::RecordPtr record);

/// Reads the statistics of every held record and submits them: at ophook.flush(), at the end of
/// a run, before the program pauses for a termination signal.
void resolve_held();

}  // namespace ophook::py::device_statistics
