#include "recording/nan_check.hpp"

#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/capture/strided_copy.hpp"
#include "ophook/files/npy.hpp"
#include "ophook/log.hpp"
#include "ophook/stats/stats.hpp"
#include "recording/device_reads.hpp"
#include "recording/record_submission.hpp"
#include "recording/source_location.hpp"
#include "thread_state.hpp"
#include "trigger_listener.hpp"

namespace ophook::py {
namespace {

/// The bytes the check reads: the copy, or the caller's own array while the call runs.
std::span<const std::byte> checked_bytes(const core::ArrayCapture& array) {
  if (array.captured) return {array.bytes(), array.nbytes};
  return {array.live, array.live ? array.live_nbytes : 0};
}

}  // namespace

bool any_nonfinite(const core::Recorder& recorder, const core::CallRecord& record, std::size_t from, std::size_t to,
                   Arrays which) {
  for (std::size_t i = from; i < to; ++i) {
    const auto& array = record.arrays[i];
    if (which != Arrays::All && (array.live != nullptr) != (which == Arrays::InPlace)) continue;
    if (array.given_stats) {  // counted when its bytes were read (on the host or its device): not read again
      if (array.given_stats->nan + array.given_stats->inf > 0) return true;
      continue;
    }
    const auto bytes = checked_bytes(array);
    if (bytes.data() == nullptr) continue;
    const auto& descr = recorder.dtype(array.dtype_id).descr;
    if (!descr.empty() && core::has_nonfinite(descr, bytes.data(), bytes.size())) return true;
  }
  return false;
}

namespace {

/// A compiled kernel's aten ops and the modules they run in, from its annotation's "computes"
/// and "modules": ", computing aten.view, aten.addmm in transformer.h.1.mlp.c_fc"; empty for
/// other ops. (The call's own module is the compiled callable's.)
std::string kernel_contents(const core::OpEntry& op) {
  if (op.level != core::Level::Compiled) return {};
  auto listed = [&](const char* key) {
    std::string text;
    for (const auto& item : core::annotation_list(op.annotation, key)) text += (text.empty() ? "" : ", ") + item;
    return text;
  };
  const auto computes = listed("computes"), modules = listed("modules");
  if (computes.empty()) return {};
  return ", computing " + computes + (modules.empty() ? "" : " in " + modules);
}

std::string describe_call(const core::Recorder& recorder, const core::CallRecord& record) {
  const auto& op = recorder.op(record.op_id);
  std::string out = "seq " + std::to_string(record.seq) + " " + op.name;
  if (record.source_file_id) {
    out += " at " + recorder.text(record.source_file_id) + ":" + std::to_string(record.source_line) + ":" +
           recorder.text(record.source_func_id);
  }
  if (record.module_id) out += " in module " + recorder.text(record.module_id);
  if (record.phase != core::Phase::None) out += std::string(" (") + std::string(core::to_string(record.phase)) + ")";
  if (record.forward_file_id) {
    out += ", its node made in forward at " + recorder.text(record.forward_file_id) + ":" +
           std::to_string(record.forward_line) + ":" + recorder.text(record.forward_func_id);
  }
  return out + kernel_contents(op);
}

/// Whether the calling context's np.errstate (np.geterr(): per thread and context in NumPy >= 2)
/// silences the conditions behind the outputs' non-finite values: "invalid" for NaN, "divide" or
/// "over" for Inf. Silenced means set to anything but NumPy's default "warn" ("raise" never gets
/// here: NumPy raised). Called only for a fresh NaN/Inf, so the hot path pays nothing.
bool errstate_silences(const core::Recorder& recorder, const core::CallRecord& record, std::size_t first_output) {
  static PyObject* geterr = nullptr;  // numpy.geterr, kept for the process
  if (geterr == nullptr) {
    PyRef name = PyRef::steal(PyUnicode_FromString("numpy"));
    PyRef numpy = PyRef::steal(name ? PyImport_GetModule(name.get()) : nullptr);
    geterr = numpy ? PyObject_GetAttrString(numpy.get(), "geterr") : nullptr;
    if (geterr == nullptr) {
      PyErr_Clear();
      return false;
    }
  }
  BusyScope busy;
  PyRef state = PyRef::steal(PyObject_CallNoArgs(geterr));
  if (!state || !PyDict_Check(state.get())) {
    PyErr_Clear();
    return false;
  }
  auto silenced = [&](const char* condition) {
    PyObject* value = PyDict_GetItemString(state.get(), condition);  // borrowed
    const char* text = value && PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
    return text != nullptr && std::string_view(text) != "warn";
  };
  std::uint64_t nan = 0, inf = 0;
  for (std::size_t i = first_output; i < record.arrays.size(); ++i) {
    const auto& array = record.arrays[i];
    const auto& descr = recorder.dtype(array.dtype_id).descr;
    const auto bytes = checked_bytes(array);
    if (array.given_stats) {
      nan += array.given_stats->nan, inf += array.given_stats->inf;
      continue;
    }
    if (bytes.data() == nullptr || descr.empty()) continue;
    const auto stats = core::compute_stats(descr, bytes.data(), bytes.size());
    nan += stats.nan, inf += stats.inf;
  }
  if (nan && !silenced("invalid")) return false;
  return !inf || silenced("divide") || silenced("over");
}

/// A culprit whose check read its arrays in place (a CheckOnly call in `stats` or `dump` mode):
/// its arrays are copied now, while the call's values are still there, so that its record carries
/// statistics and files as a recorded call's does.
void copy_live_arrays(const core::Recorder& recorder, core::CallRecord& record) {
  thread_local std::vector<std::int64_t> byte_strides;  // reused: no allocation per array
  for (auto& array : record.arrays) {
    if (array.live == nullptr || array.captured) continue;
    const auto item = core::npy_item_size(recorder.dtype(array.dtype_id).descr);
    const auto count = core::element_count(array.shape);
    std::byte* copy = array.reserve_data(count * item);
    if (array.strides.empty()) {
      std::memcpy(copy, array.live, count * item);
    } else {
      byte_strides.assign(array.strides.begin(), array.strides.end());
      for (auto& stride : byte_strides) stride *= static_cast<std::int64_t>(item);
      core::strided_copy(copy, array.live, array.shape, byte_strides, item);
    }
    array.captured = true;
    array.live = nullptr;
  }
}

}  // namespace

std::string announce_nonfinite(core::Recorder& recorder, core::CallRecord& record) {
  record.nonfinite_new = true;
  auto where = describe_call(recorder, record);
  if (recorder.claim_first_nonfinite_report()) {
    core::log_warn("first NaN/Inf from finite inputs: {}", where);
    tell_trigger_listener("first NaN/Inf from finite inputs: " + where);
    // Its trigger, on its way to the writer, fetches what the devices' rings kept: settled first.
    if (const auto* reads = device_reads()) reads->settle_ring();
  }
  return where;
}

bool fresh_nonfinite(const core::Recorder& recorder, const core::CallRecord& record, std::size_t first_output,
                     std::optional<bool> inputs_nonfinite_before) {
  // Outputs first: the inputs are looked at only for a NaN/Inf (those the call could not write
  // into are as they were before it).
  auto inputs_nonfinite = [&] {
    if (!inputs_nonfinite_before) return any_nonfinite(recorder, record, 0, first_output, Arrays::All);
    return *inputs_nonfinite_before || any_nonfinite(recorder, record, 0, first_output, Arrays::Copied);
  };
  return !record.nonfinite_scalar_input && any_nonfinite(recorder, record, first_output, record.arrays.size(), Arrays::All) &&
         !inputs_nonfinite();
}

namespace {

/// A CheckOnly call's source line, found only for a culprit (or a call judged later).
void locate_check_only_source(core::Recorder& recorder, core::CallRecord& record) {
  SourceSite site;
  if (recorder.config().stack) locate_source(site, recorder);
  record.source_file_id = site.file_id, record.source_func_id = site.func_id, record.source_line = site.line;
}

/// A culprit: reported once on stderr, recorded (a CheckOnly call gets its seq and source now),
/// and raised as FloatingPointError under `raise`, once its record and dumps are on disk.
PyObject* report_nonfinite(core::Recorder& recorder, core::RecordPtr& record, PyObject* result, RecordUse use) {
  if (use == RecordUse::CheckOnly) {
    record->seq = recorder.next_seq();
    locate_check_only_source(recorder, *record);
    if (recorder.config().mode != core::Mode::Trace) copy_live_arrays(recorder, *record);
  }
  const auto where = announce_nonfinite(recorder, *record);
  const auto op_name = recorder.op(record->op_id).name;
  const bool raise = recorder.config().nan == core::NanPolicy::Raise;
  submit_record(recorder, std::move(record));
  if (!raise) return result;
  Py_BEGIN_ALLOW_THREADS recorder.flush();
  Py_END_ALLOW_THREADS
  Py_DECREF(result);
  PyErr_Format(PyExc_FloatingPointError, "ophook: %s produced NaN/Inf from finite inputs (%s)",
               op_name.c_str(), where.c_str());
  return nullptr;
}

}  // namespace

namespace {
const CulpritCheck* culprit_check = nullptr;
}  // namespace

void set_culprit_check(const CulpritCheck* check) noexcept { culprit_check = check; }

PyObject* gather_culprit_evidence(core::CallRecord& record) {
  return culprit_check != nullptr ? culprit_check->gather(record) : nullptr;
}

bool convicted(core::CallRecord& record, bool fresh, PyObject* evidence) {
  const bool culprit = fresh && (culprit_check == nullptr || !culprit_check->fed(evidence));
  if (!culprit) record.forward_file_id = record.forward_func_id = 0, record.forward_line = 0;
  return culprit;
}

PyObject* check_nonfinite(core::Recorder& recorder, core::RecordPtr& record, std::size_t first_output,
                          std::optional<bool> inputs_nonfinite_before, PyObject* result, RecordUse use) {
  const auto* reads = device_reads();
  // `warn` on a call whose device tensors the statistics kernel reads: judged when the results
  // arrive, oldest first, without waiting for them here. A call no level records takes its line
  // now, while its frames are there; its seq only if it turns out the culprit.
  if (recorder.config().nan == core::NanPolicy::Warn && group_of(recorder.op(record->op_id).level) != LevelGroup::Numpy &&
      reads != nullptr &&
      reads->check_later(*record, first_output, inputs_nonfinite_before, use == RecordUse::CheckOnly)) {
    if (use == RecordUse::CheckOnly) locate_check_only_source(recorder, *record);
    submit_record(recorder, std::move(record));
    return result;
  }
  if (reads != nullptr) reads->resolve(*record);  // tensors on devices: their counts, one synchronisation
  // The culprit check's evidence only for a call that would be one: it reads the node's state.
  bool fresh = fresh_nonfinite(recorder, *record, first_output, inputs_nonfinite_before);
  if (fresh) {
    PyRef evidence = PyRef::steal(gather_culprit_evidence(*record));
    fresh = convicted(*record, fresh, evidence.get());
  }
  // Calls judged later come first: the first culprit is the first in seq order. Waited for only
  // here, where this call would be a culprit: a call that reads nothing on a device (an int
  // tensor, a shape) must not wait for the GPU.
  if (fresh && reads != nullptr) reads->resolve_held();
  if (fresh && group_of(recorder.op(record->op_id).level) == LevelGroup::Numpy &&
      errstate_silences(recorder, *record, first_output)) {
    record->nonfinite_expected = true;  // the program said it expects this: counted, not reported
  } else if (fresh) {
    return report_nonfinite(recorder, record, result, use);
  }
  if (use == RecordUse::CheckOnly) {
    return_check_record(std::move(record));
  } else {
    submit_record(recorder, std::move(record));
  }
  return result;
}

}  // namespace ophook::py
