#pragma once
#include <cstddef>
#include <optional>

#include "ophook/model/record.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/process/recorder.hpp"

/// The records whose arrays wait for a read-back (device_readback.hpp), held by the program's
/// side until their values are in, so that the device is synchronised once per batch instead of
/// once per op (docs/devices.md): those waiting for the statistics kernel alone are submitted, in
/// order, as their results arrive, and OPHOOK_NAN=warn judges them then. Every function needs the
/// GIL, which also guards the queue.
namespace ophook::py::device_readback {

/// OPHOOK_NAN=warn: when every array `record` waits for waits for the statistics kernel, keeps
/// the check's facts with it and returns true: the record, held, is judged (fresh_nonfinite) when
/// its results arrive, oldest first, so the first culprit is still the first judged. A
/// `check_only` record (a call no level records) is then written, given its seq, only if it is the
/// culprit. False otherwise: the caller checks now.
bool check_later(core::CallRecord& record, std::size_t first_output, std::optional<bool> inputs_nonfinite_before,
                 bool check_only);

/// Drops what `record`'s arrays wait for, unread, and its held check: a record going back unwritten
/// (a CheckOnly call that was no culprit or raised) must leave no entry that its next use would
/// take for its own.
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

/// The recorder's exit hook (os._exit: forked and DataLoader workers leave that way): resolve_held()
/// when the exiting thread holds the GIL of a running interpreter; otherwise the held records are
/// counted as dropped. Registered by enable_device_path().
void resolve_held_before_exit() noexcept;

/// Registers the device read-back with the recording layer (recording/device_reads.hpp): done
/// when torch's device path is enabled.
void register_with_recording() noexcept;

}  // namespace ophook::py::device_readback
