#include "torch/collectives/collective_records.hpp"

#include <optional>
#include <unordered_map>
#include <utility>

#include "ophook/log.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/process/fork_handlers.hpp"
#include "ophook/process/recorder.hpp"
#include "program_pause.hpp"
#include "recording/call_recording.hpp"
#include "recording/nan_check.hpp"
#include "recording/source_location.hpp"
#include "recording/step_counter.hpp"
#include "recording/value_capture.hpp"
#include "thread_state.hpp"
#include "torch/handlers.hpp"
#include "torch/module_stack.hpp"
#include "trigger_listener.hpp"

namespace ophook::py::collectives {
namespace {

/// A record between its collective's issue and its completion.
struct Open {
  core::RecordPtr record;
  std::optional<bool> inputs_nonfinite_before;  // judged where they lie, before the op wrote them
};

// Never destroyed: a record still open at exit is submitted by the exit hook, or dropped with the
// process (counted by the recorder's held records then).
auto& open_records = *new std::unordered_map<std::uint64_t, Open>;
std::uint64_t next_token = 1;

// A forked child's open collectives are its parent's works: forgotten there (leaked: their
// buffers may be in use by the parent's communication threads, which the child does not have).
const bool forgotten_in_children = [] {
  core::set_fork_handler(core::ForkStage::OpenCollectives, {nullptr, nullptr, []() noexcept {
                                                              for (auto& [token, open] : open_records) {
                                                                (void)open.record.release();
                                                              }
                                                              open_records.clear();
                                                            }});
  return true;
}();

void note_held(core::Recorder& recorder) { recorder.counters().set_open_collectives(open_records.size()); }

/// The first collective of a run that received NaN/Inf: one line on stderr. The writer writes the
/// ring on it (as on a culprit), since the culprit is on another rank.
void announce_received(core::Recorder& recorder, const core::CallRecord& record) {
  static bool announced = false;
  if (announced) return;
  announced = true;
  const auto& c = record.collective;
  core::log_warn("first NaN/Inf received from another rank: seq {} {} (group {}, collective #{} of ranks {}){}: its "
                 "inputs on this rank were finite",
                 record.seq, recorder.op(record.op_id).name, recorder.text(c.group_id), c.group_seq,
                 recorder.text(c.ranks_id), record.phase == core::Phase::None ? "" : std::string(" in ") +
                                                                                       std::string(core::to_string(record.phase)));
  tell_trigger_listener("first NaN/Inf received from another rank: seq " + std::to_string(record.seq) + " " +
                        recorder.op(record.op_id).name + " (group " + recorder.text(c.group_id) + ", collective #" +
                        std::to_string(c.group_seq) + ")");
}

}  // namespace

std::uint32_t op_id(const std::string& name) {
  static const bool exit_hook_added = [] {
    core::Recorder::add_exit_hook(&submit_open_before_exit);
    return true;
  }();
  (void)exit_hook_added;
  auto* recorder = core::Recorder::get();
  return recorder != nullptr ? recorder->op_id(name, core::Level::Collective) : 0;
}

PyObject* begin(std::uint32_t op_id, PyObject* values, const std::string& group, const std::string& ranks_json,
                std::uint64_t group_seq, std::int64_t peer) {
  ThreadState* state = nullptr;
  auto* recorder = recorder_for(op_id, state);
  if (recorder == nullptr || state->in_kernel > 0 || !PyTuple_Check(values)) Py_RETURN_NONE;
  const auto phase = torch_handlers::current_phase(*state);
  const auto module = module_stack::current_module_id(phase);
  if (!module_stack::module_selected(module)) Py_RETURN_NONE;
  SourceSite site;
  if (recorder->config().stack && locate_source(site, *recorder) == CallOrigin::TensorRebuild) Py_RETURN_NONE;
  auto record = core::RecordPool::take();
  record->seq = recorder->next_seq();
  record->op_id = op_id;
  record->phase = phase;
  record->module_id = module;
  record->source_file_id = site.file_id, record->source_func_id = site.func_id, record->source_line = site.line;
  record->parent = state->innermost_seq;
  record->step = steps::completed();
  record->depth = static_cast<std::uint16_t>(state->depth_of(LevelGroup::Collective));
  record->tid = current_tid(*state);
  record->collective = {recorder->intern(group), recorder->intern(ranks_json), group_seq,
                        static_cast<std::int32_t>(peer), false, true, false};
  Open open;
  {
    ValueCapture capture(*record, *recorder);
    program_may_have_run();
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values); ++i) capture.value(PyTuple_GET_ITEM(values, i));
    capture.begin_kwargs();  // none: the ops take their arguments by position
    // The op writes into its tensors (every collective reads or fills them in place): inputs are
    // judged, and summarised, now.
    if (capture.checks_in_place()) {
      open.inputs_nonfinite_before = any_nonfinite(*recorder, *record, 0, record->arrays.size(), Arrays::InPlace);
    }
    if (capture.stats_in_place()) capture.inputs_captured(/*inputs_may_change=*/true);
    capture.finish_stats_in_place();
    if (capture.queued_on_device()) launch_device_queued();
  }
  record->t_ns = state->clock.now_ns();
  open.record = std::move(record);
  const auto token = next_token++;
  open_records.emplace(token, std::move(open));
  note_held(*recorder);
  return PyLong_FromUnsignedLongLong(token);
}

void complete(PyObject* token, PyObject* outputs, PyObject* error, bool async_op) {
  const auto key = PyLong_AsUnsignedLongLong(token);
  if (PyErr_Occurred()) return PyErr_Clear();
  const auto it = open_records.find(key);
  if (it == open_records.end()) return;
  Open open = std::move(it->second);
  open_records.erase(it);
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return;
  note_held(*recorder);
  auto& record = *open.record;
  record.collective.async = async_op;
  auto& state = thread_state();
  record.dur_ns = state.clock.now_ns() - record.t_ns;
  const auto first_output = record.arrays.size();
  {
    ValueCapture capture(record, *recorder);
    capture.begin_outputs();
    program_may_have_run();
    if (outputs != nullptr && PyTuple_Check(outputs)) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outputs); ++i) capture.value(PyTuple_GET_ITEM(outputs, i));
    }
    capture.finish_stats_in_place();
    if (capture.queued_on_device()) launch_device_queued();
  }
  if (error != nullptr && error != Py_None) {
    record.has_error = true;
    record.error = attribute_str_or(reinterpret_cast<PyObject*>(Py_TYPE(error)), "__name__", "Exception") + ": " +
                   str_or(error, "");
  }
  // Outputs holding NaN/Inf that the inputs did not: another rank sent them (or the reduction made
  // them on every rank alike, which `ophook report` tells from the other ranks' records).
  if (!record.has_error && recorder->config().nan != core::NanPolicy::Off && record.arrays.size() > first_output &&
      fresh_nonfinite(*recorder, record, first_output, open.inputs_nonfinite_before)) {
    record.collective.received_nonfinite = true;
    announce_received(*recorder, record);
  }
  submit_record(*recorder, std::move(open.record));
}

void submit_open_before_exit() noexcept {
  if (open_records.empty() || !interpreter_running() || !PyGILState_Check()) return;
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return;
  try {
    auto records = std::move(open_records);
    open_records.clear();
    for (auto& [token, open] : records) {
      open.record->collective.completed = false;
      submit_record(*recorder, std::move(open.record));
    }
    note_held(*recorder);
  } catch (const std::exception&) {
    // The records stay unsubmitted: the recorder counts them as dropped.
  }
}

}  // namespace ophook::py::collectives
