#pragma once
#include <time.h>

#include <memory>
#include <utility>

#include "ophook/recorder.hpp"
#include "python_common.hpp"
#include "source_location.hpp"
#include "thread_state.hpp"
#include "value_capture.hpp"

namespace ophook::py {

inline std::int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

/// The recorder when a call of `op_id` on this thread should be recorded, else nullptr: recording
/// is on, ophook is not itself running Python here, the call is outermost (or OPHOOK_NESTED=1) and
/// the op passes the filters. The whole decision is a few loads: it runs on every hooked call.
inline core::Recorder* recorder_for(std::uint32_t op_id) noexcept {
  if (!g_recording_on.load(std::memory_order_relaxed)) return nullptr;
  auto* recorder = core::Recorder::get();
  const auto& state = thread_state();
  if (recorder == nullptr || state.busy) return nullptr;
  if (state.depth > 0 && !recorder->config().nested) return nullptr;
  return recorder->op(op_id).recorded ? recorder : nullptr;
}

/// "Type: message" of the exception being raised, leaving it set exactly as it was.
std::string describe_pending_exception();

/// Hands a finished record to the writer; waits for room with the GIL released when the queue is
/// full, so other Python threads run meanwhile.
void submit_record(core::Recorder& recorder, core::RecordPtr record);

/// Encodes a call's result as outputs (a tuple result gives one output per element).
void capture_outputs(ValueCapture& capture, PyObject* result);

/// Records one call: encodes the inputs (snapshotting array bytes before the original runs — it
/// may write into them), runs `invoke`, then encodes the result or the exception, the source line
/// and timing. Returns what `invoke` returned, with any exception left untouched.
template <typename CaptureInputs, typename Invoke>
PyObject* record_call(core::Recorder& recorder, std::uint32_t op_id, core::Phase phase, std::uint32_t module_id,
                      CaptureInputs&& capture_inputs, Invoke&& invoke) {
  auto& state = thread_state();
  auto record = std::make_unique<core::CallRecord>();
  record->seq = recorder.next_seq();
  record->op_id = op_id;
  record->phase = phase;
  record->module_id = module_id;
  record->depth = static_cast<std::uint16_t>(state.depth);
  record->tid = current_tid();
  record->values.reserve(128);
  ValueCapture capture(*record, recorder);
  capture_inputs(capture);

  ++state.depth;
  record->t_ns = monotonic_ns();
  PyObject* result = invoke();
  record->dur_ns = monotonic_ns() - record->t_ns;
  --state.depth;

  capture.begin_outputs();
  if (result != nullptr) {
    capture_outputs(capture, result);
  } else {
    record->has_error = true;
    record->error = describe_pending_exception();
  }
  if (recorder.config().stack) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    locate_source(*record, recorder);
    PyErr_Restore(type, value, traceback);
  }
  submit_record(recorder, std::move(record));
  return result;
}

}  // namespace ophook::py
