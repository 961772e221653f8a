#include "recording/call_recording.hpp"

#include <string>

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

void capture_outputs(ValueCapture& capture, PyObject* result) {
  if (PyTuple_CheckExact(result)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); ++i) capture.value(PyTuple_GET_ITEM(result, i));
  } else {
    capture.value(result);
  }
}

bool may_write_inputs(const core::Recorder& recorder, std::uint32_t op_id, const ValueCapture& capture) {
  return capture.inputs_may_be_written() || recorder.op(op_id).writes_arguments;
}

}  // namespace ophook::py
