#pragma once
#include "ophook/model/record_pool.hpp"
#include "ophook/process/recorder.hpp"

/// Where a finished record goes: to the writer (waiting for room with the GIL released), to the
/// device path that holds it until its arrays' values are read back, or — a check-only record of
/// OPHOOK_NAN that was no culprit — back to this thread's spare. GIL required.
namespace ophook::py {

/// Hands a finished record to the writer; waits for room with the GIL released when the queue is
/// full, so other Python threads run meanwhile.
void submit_record(core::Recorder& recorder, core::RecordPtr record);

/// A record for a CheckOnly call (this thread's spare, else a fresh one), and where it goes back
/// when the call was no culprit: no seq is spent and no record reaches the writer.
core::RecordPtr take_check_record();
void return_check_record(core::RecordPtr record) noexcept;

}  // namespace ophook::py
