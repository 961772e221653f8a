#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ophook/model/record.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/process/recorder.hpp"

/// What the recording layer asks of a framework's device path, whose arrays wait for values read
/// back from a device after the call (docs/devices.md): torch's registers itself when torch is
/// installed (torch/devices/device_reads_of_torch.cpp). NumPy's arrays never wait, so the NumPy path
/// neither includes nor calls device code: with no path registered no array waits, and the
/// functions below do nothing. GIL required throughout.
namespace ophook::py {

struct DeviceReads {
  /// Whether arrays of `record` wait for a read-back. A few loads when none does.
  bool (*awaited)(const core::CallRecord& record) noexcept;
  /// Holds a finished `record` whose arrays wait, submitting it once they are in.
  void (*defer)(core::Recorder& recorder, core::RecordPtr record);
  /// Launches the statistics kernel over the tensors queued so far.
  void (*launch_queued)();
  /// Reads back what `record`'s arrays wait for now, for OPHOOK_NAN's check.
  void (*resolve)(core::CallRecord& record);
  /// OPHOOK_NAN=warn: leaves the check of `record` until its results arrive; false: check now.
  bool (*check_later)(core::CallRecord& record, std::size_t first_output,
                      std::optional<bool> inputs_nonfinite_before, bool check_only);
  /// Drops what `record`'s arrays wait for, unread (a record going back unwritten).
  void (*forget)(const core::CallRecord& record) noexcept;
  /// Reads back every held record and submits them (flush, end of a run, a culprit found).
  void (*resolve_held)();
  /// The first NaN's culprit is judged: what each device's ring kept is settled first.
  void (*settle_ring)();
};

/// Counts the moments at which the program's code may have run since ophook last looked: before
/// a call's inputs are read, and after the call. A device path that asks the driver whether a
/// stream is capturing a CUDA graph asks again only at the next moment, so a call asks about its
/// stream twice at most, not once per tensor. The GIL guards it.
inline std::uint64_t program_moments = 0;
inline void program_may_have_run() noexcept { ++program_moments; }

/// The registered device path; null until one is.
const DeviceReads* device_reads() noexcept;
void register_device_reads(const DeviceReads& reads) noexcept;

/// device_reads()->resolve_held() where a path is registered.
void resolve_held_device_reads();

}  // namespace ophook::py
