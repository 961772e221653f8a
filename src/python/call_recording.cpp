#include "call_recording.hpp"

#include <string>

#include "device_readback.hpp"
#include "ophook/log.hpp"
#include "ophook/stats.hpp"

namespace ophook::py {

std::string describe_pending_exception() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "SystemError: error return without exception set";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string out = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value != nullptr) {
    BusyScope busy;  // str() of a user exception may call NumPy
    const auto message = str_or(value, "<unprintable>");
    if (!message.empty()) out += ": " + message;
  }
  PyErr_Restore(type, value, traceback);
  return out;
}

void submit_record(core::Recorder& recorder, core::RecordPtr record) {
  if (device_readback::awaited(*record)) return device_readback::defer(recorder, std::move(record));
  if (recorder.try_submit(record)) return;
  Py_BEGIN_ALLOW_THREADS recorder.submit(std::move(record));
  Py_END_ALLOW_THREADS
}

void capture_outputs(ValueCapture& capture, PyObject* result) {
  if (PyTuple_CheckExact(result)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); ++i) capture.value(PyTuple_GET_ITEM(result, i));
  } else {
    capture.value(result);
  }
}

}  // namespace ophook::py

namespace ophook::py {
namespace {

bool any_nonfinite(const core::Recorder& recorder, const core::CallRecord& record, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    const auto& array = record.arrays[i];
    if (array.given_stats && array.given_stats->nan + array.given_stats->inf > 0) return true;
    if (!array.captured) continue;
    const auto& descr = recorder.dtype(array.dtype_id).descr;
    if (!descr.empty() && core::has_nonfinite(descr, array.data.get(), array.nbytes)) return true;
  }
  return false;
}

std::string describe_call(const core::Recorder& recorder, const core::CallRecord& record) {
  std::string out = "seq " + std::to_string(record.seq) + " " + recorder.op(record.op_id).name;
  if (record.source_file_id) {
    out += " at " + recorder.text(record.source_file_id) + ":" + std::to_string(record.source_line) + ":" +
           recorder.text(record.source_func_id);
  }
  if (record.module_id) out += " in module " + recorder.text(record.module_id);
  if (record.phase != core::Phase::None) out += std::string(" (") + std::string(core::to_string(record.phase)) + ")";
  return out;
}

}  // namespace

PyObject* check_nonfinite(core::Recorder& recorder, core::RecordPtr& record, std::size_t first_output,
                          PyObject* result) {
  device_readback::resolve(*record);  // tensors on devices: their counts, one synchronisation
  const bool fresh = !record->nonfinite_scalar_input &&
                     any_nonfinite(recorder, *record, first_output, record->arrays.size()) &&
                     !any_nonfinite(recorder, *record, 0, first_output);
  if (!fresh) {
    submit_record(recorder, std::move(record));
    return result;
  }
  record->nonfinite_new = true;
  const auto where = describe_call(recorder, *record);
  const auto op_name = recorder.op(record->op_id).name;
  const bool raise = recorder.config().nan == core::NanPolicy::Raise;
  if (recorder.claim_first_nonfinite_report()) {
    core::logger().warn("first NaN/Inf from finite inputs: {}", where);
  }
  submit_record(recorder, std::move(record));
  if (!raise) return result;
  // The record and its dumps are on disk before the program sees the exception.
  Py_BEGIN_ALLOW_THREADS recorder.flush();
  Py_END_ALLOW_THREADS
  Py_DECREF(result);
  PyErr_Format(PyExc_FloatingPointError, "ophook: %s produced NaN/Inf from finite inputs (%s)",
               op_name.c_str(), where.c_str());
  return nullptr;
}

}  // namespace ophook::py
