#include "torch/torch_device_module.hpp"

#include <string>
#include <vector>

#include "ophook/log.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"

namespace ophook::py {
namespace {

TorchDeviceModule held;  // for the life of the process

}  // namespace

const TorchDeviceModule& torch_device_module() { return held; }

bool load_torch_device_module() {
  if (held.loaded()) return true;
  PyRef module = PyRef::steal(PyImport_ImportModule("ophook._torch.device"));
  auto get = [&](const char* name) { return module ? PyObject_GetAttrString(module.get(), name) : nullptr; };
  TorchDeviceModule found{get("copy_into"), get("snapshot"), get("statistics"), get("resolve"), get("local_shard"),
                     get("Unread")};
  if (!found.copy_into || !found.snapshot || !found.statistics || !found.resolve || !found.local_shard ||
      !found.unread_type) {
    core::log_warn("tensors on other devices than the CPU are described without values: {}",
                        PyErr_Occurred() ? take_python_error() : std::string("ophook._torch.device is incomplete"));
    for (PyObject* f : {found.copy_into, found.snapshot, found.statistics, found.resolve, found.local_shard,
                        found.unread_type}) {
      Py_XDECREF(f);
    }
    return false;
  }
  held = found;
  return true;
}

std::string take_python_error() {
  std::string text = "unknown error";
  if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
    PyErr_Clear();
    PyErr_SetInterrupt();
    return "interrupted";
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type != nullptr) text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value != nullptr) text += ": " + str_or(value, "");
  Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(traceback);
  return text;
}

PyObject* resolve_function() { return held.resolve; }

bool as_unread(PyObject* result, Unread& out) {
  if (held.unread_type == nullptr || Py_TYPE(result) != reinterpret_cast<PyTypeObject*>(held.unread_type)) {
    return false;
  }
  out.reason = attribute_str_or(result, "reason", "not read through torch: spec only");
  out.detail = attribute_str_or(result, "detail", "");
  PyRef oom = PyRef::steal(PyObject_GetAttrString(result, "out_of_memory"));
  if (!oom) PyErr_Clear();
  out.out_of_memory = oom.get() == Py_True;
  return true;
}

void report_unread(const core::CallRecord& record, core::ArrayCapture& out, const Unread& unread) {
  auto* recorder = core::Recorder::get();
  out.captured = false;
  out.nbytes = 0;
  out.given_stats.reset();
  if (recorder == nullptr) return;
  out.no_data_reason_id = recorder->intern(unread.reason);
  const auto count = recorder->counters().count_tensor_not_read(unread.out_of_memory);
  const auto& device = out.device_id ? recorder->text(out.device_id) : std::string("cpu");
  if (count.all == 1) {
    core::log_warn("a tensor on {} of {} (seq {}) was not read ({}{}{}): it is recorded without values, with "
                        "that reason; summary.json counts such tensors under notes.tensors_not_read",
                        device, recorder->op(record.op_id).name, record.seq, unread.reason,
                        unread.detail.empty() ? "" : ": ", unread.detail);
  }
  recorder->facts().add_note("tensors_not_read", {{"count", count.all},
                                          {"out_of_memory", count.out_of_memory},
                                          {"last_reason", unread.reason},
                                          {"last_detail", unread.detail},
                                          {"last_device", device},
                                          {"last_seq", record.seq},
                                          {"last_op", recorder->op(record.op_id).name}});
}

std::vector<std::string> nvrtc_libraries() {
  std::vector<std::string> paths;
  PyRef module = PyRef::steal(PyImport_ImportModule("ophook._torch.device"));
  PyRef found = module ? PyRef::steal(PyObject_CallMethod(module.get(), "nvrtc_libraries", nullptr)) : PyRef();
  if (!found || !PyList_Check(found.get())) {
    take_python_error();
    return paths;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(found.get()); ++i) paths.push_back(str_or(PyList_GET_ITEM(found.get(), i), ""));
  return paths;
}

PyRef local_shard(PyObject* tensor, std::string& note) {
  if (held.local_shard == nullptr) return {};
  PyRef answer = PyRef::steal(PyObject_CallOneArg(held.local_shard, tensor));
  if (!answer) {
    take_python_error();
    return {};
  }
  if (!PyTuple_Check(answer.get()) || PyTuple_GET_SIZE(answer.get()) != 2) return {};
  note = str_or(PyTuple_GET_ITEM(answer.get(), 1), "DTensor: this rank's local shard");
  return PyRef::borrow(PyTuple_GET_ITEM(answer.get(), 0));
}

}  // namespace ophook::py
