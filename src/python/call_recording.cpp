#include "call_recording.hpp"

#include <string>

namespace ophook::py {
namespace {

std::string text_of(PyObject* object) {
  PyRef text = PyRef::steal(PyObject_Str(object));
  const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  return utf8;
}

}  // namespace

std::string describe_pending_exception() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "SystemError: error return without exception set";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string out = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value != nullptr) {
    BusyScope busy;  // str() of a user exception may call NumPy
    const auto message = text_of(value);
    if (!message.empty()) out += ": " + message;
  }
  PyErr_Restore(type, value, traceback);
  return out;
}

void submit_record(core::Recorder& recorder, core::RecordPtr record) {
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
