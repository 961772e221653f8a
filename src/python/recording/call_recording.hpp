#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "import_guard.hpp"

#include "ophook/model/record_pool.hpp"
#include "ophook/process/recorder.hpp"
#include "overrides.hpp"
#include "python_common.hpp"
#include "recording/device_reads.hpp"
#include "recording/nan_check.hpp"
#include "recording/record_submission.hpp"
#include "recording/source_location.hpp"
#include "recording/step_counter.hpp"
#include "recording/value_capture.hpp"
#include "thread_state.hpp"

namespace ophook::py {

/// The recorder when a call of `op_id` on this thread should be recorded, else nullptr: the
/// recording gate is open (recording on, this step and rank selected), ophook is not itself
/// running Python here, no import is in progress (OPHOOK_IMPORTS=0), the call is outermost within
/// its level (or OPHOOK_NESTED=1) and the op passes the filters. The whole decision is a few
/// loads: it runs on every hooked call. Sets `state` to this thread's state when it looked it up,
/// for record_call: every lookup of a thread-local in the extension is a call to __tls_get_addr.
inline core::Recorder* recorder_for(std::uint32_t op_id, ThreadState*& state) noexcept {
  if (!RecordingGate::open()) return nullptr;
  auto* recorder = core::Recorder::get();
  // The filter verdict first: a filtered-out call then costs no thread-local lookup.
  if (recorder == nullptr) return nullptr;
  const auto& op = recorder->op(op_id);
  if (!op.recorded) return nullptr;
  state = &thread_state();
  if (state->busy || import_guard::importing(*state)) return nullptr;
  return state->depth_of(group_of(op.level)) > 0 && !recorder->config().nested ? nullptr : recorder;
}

/// "Type: message" of the exception being raised, leaving it set exactly as it was.
std::string describe_pending_exception();

/// Launches what a device path queued for the statistics kernel (DeviceReads::launch_queued).
inline void launch_device_queued() {
  if (const auto* reads = device_reads()) reads->launch_queued();
}

/// Encodes a call's result as outputs (a tuple result gives one output per element).
void capture_outputs(ValueCapture& capture, PyObject* result);

/// Whether a call may write into its inputs, so that OPHOOK_NAN must judge those it reads in
/// place before it runs: out=, inplace=, positional outputs or ufunc.at in the call, or an op
/// that may by its kind (OpEntry::writes_arguments, decided once per op).
bool may_write_inputs(const core::Recorder& recorder, std::uint32_t op_id, const ValueCapture& capture);

/// Records one call: encodes the inputs (snapshotting array bytes before the original runs — it
/// may write into them), runs `invoke`, then encodes the result or the exception and timing. The
/// call is this level's enclosing call and every level's parent while it runs. Returns what
/// `invoke` returned, with any exception left untouched. `state` is this thread's, as
/// recorder_for() returned it. A torch call that rebuilds a tensor unpickled from another process
/// is run unrecorded (it is the transport's work, not the program's). `known_site`: where the call
/// comes from when the frames cannot say (a compiled kernel: its FX node's line), else found.
template <typename CaptureInputs, typename Invoke>
PyObject* record_call(core::Recorder& recorder, ThreadState& state, std::uint32_t op_id, core::Phase phase,
                      std::uint32_t module_id, CaptureInputs&& capture_inputs, Invoke&& invoke,
                      bool overridden = false, RecordUse use = RecordUse::Recorded,
                      const SourceSite* known_site = nullptr) {
  const bool check_only = use == RecordUse::CheckOnly;
  SourceSite site;  // a CheckOnly call's is found only if it is a culprit
  if (known_site != nullptr) {
    if (recorder.config().stack) site = *known_site;
  } else if (!check_only && recorder.config().stack &&
             locate_source(site, recorder) == CallOrigin::TensorRebuild) {
    return invoke();
  }
  auto record = check_only ? take_check_record() : core::RecordPool::take();  // recycled: no allocation per call
  if (!check_only) record->seq = recorder.next_seq();
  record->op_id = op_id;
  record->phase = phase;
  record->module_id = module_id;
  record->overridden = overridden;
  record->source_file_id = site.file_id;
  record->source_func_id = site.func_id;
  record->source_line = site.line;
  record->parent = state.innermost_seq;
  record->step = steps::completed();
  int& depth = state.depth_of(group_of(recorder.op(op_id).level));
  record->depth = static_cast<std::uint16_t>(depth);
  record->tid = current_tid(state);
  ValueCapture capture(*record, recorder, check_only, check_only && recorder.op(op_id).writes_arguments);
  program_may_have_run();
  capture_inputs(capture);
  // Inputs read in place are judged now when the call may write into them, else only after it
  // and only for a NaN/Inf in its outputs.
  std::optional<bool> inputs_nonfinite_before;
  if (capture.checks_in_place() && may_write_inputs(recorder, op_id, capture)) {
    inputs_nonfinite_before = any_nonfinite(recorder, *record, 0, record->arrays.size(), Arrays::InPlace);
  }
  if (capture.stats_in_place()) capture.inputs_captured(may_write_inputs(recorder, op_id, capture));
  // Device tensors' statistics: launched now if the call may write into them, else with the outputs'.
  if (capture.queued_on_device() && may_write_inputs(recorder, op_id, capture)) launch_device_queued();

  ++depth;
  const auto enclosing = check_only ? state.innermost_seq : std::exchange(state.innermost_seq, record->seq);
  record->t_ns = state.clock.now_ns();
  PyObject* result = invoke();
  record->dur_ns = state.clock.now_ns() - record->t_ns;
  program_may_have_run();
  state.innermost_seq = enclosing;
  --depth;

  const auto first_output = record->arrays.size();
  capture.begin_outputs();
  if (result != nullptr) {
    capture_outputs(capture, result);
  } else {
    record->has_error = true;
    record->error = describe_pending_exception();
  }
  capture.finish_stats_in_place();
  if (capture.queued_on_device()) launch_device_queued();
  if (result != nullptr && recorder.config().nan != core::NanPolicy::Off &&
      !recorder.op(op_id).uninitialized_output) {
    return check_nonfinite(recorder, record, first_output, inputs_nonfinite_before, result, use);
  }
  if (check_only) {
    return_check_record(std::move(record));
  } else {
    submit_record(recorder, std::move(record));
  }
  return result;
}

/// What a hook does with one call: run the @ophook.override rule when one replaces the op (the
/// call is then recorded with "overridden": true), record it when it is recorded, else run the
/// original at once. `invoke_rule(rule)` calls the rule with the original callable.
template <typename CaptureInputs, typename InvokeOriginal, typename InvokeRule>
PyObject* hooked_call(std::uint32_t op_id, CaptureInputs&& capture_inputs, InvokeOriginal&& invoke_original,
                      InvokeRule&& invoke_rule) {
  PyObject* rule = has_overrides() ? override_for(op_id) : nullptr;
  ThreadState* state = nullptr;
  auto* recorder = recorder_for(op_id, state);
  if (rule == nullptr) {
    if (recorder == nullptr) return invoke_original();
    return record_call(*recorder, *state, op_id, core::Phase::None, 0, capture_inputs, invoke_original);
  }
  auto run_rule = [&] { return invoke_rule(rule); };
  if (recorder == nullptr) return run_rule();
  return record_call(*recorder, *state, op_id, core::Phase::None, 0, capture_inputs, run_rule, true);
}

}  // namespace ophook::py
