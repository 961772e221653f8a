#include "trigger_listener.hpp"

#include "thread_state.hpp"

namespace ophook::py {
namespace {
PyObject* listener = nullptr;
}  // namespace

void set_trigger_listener(PyObject* callable) {
  Py_XINCREF(callable);
  Py_XDECREF(listener);
  listener = callable;
}

void tell_trigger_listener(const std::string& why) noexcept {
  if (listener == nullptr) return;
  BusyScope busy;  // the listener's store calls are ophook's, not the program's
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);  // an exception on its way (OPHOOK_NAN=raise) stays as it was
  PyRef text = PyRef::steal(PyUnicode_DecodeUTF8(why.data(), static_cast<Py_ssize_t>(why.size()), "replace"));
  PyRef result = text ? PyRef::steal(PyObject_CallOneArg(listener, text.get())) : PyRef();
  if (!result) PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

}  // namespace ophook::py
