#include "import_guard.hpp"

#include <algorithm>
#include <vector>

namespace ophook::py::import_guard {
namespace {

PyObject* bootstrap_module = nullptr;  // strong
PyObject* guarded = nullptr;            // our _find_and_load (its self is the original); strong
std::vector<PyObject*> in_flight;       // specs of imports in progress at install(); strong

PyObject* find_and_load(PyObject* original, PyObject* const* args, Py_ssize_t nargs) {
  auto& state = thread_state();
  ++state.importing;
  PyObject* module = PyObject_Vectorcall(original, args, static_cast<size_t>(nargs), nullptr);
  --state.importing;
  return module;
}

PyMethodDef find_and_load_def = {
    "_find_and_load", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&find_and_load)), METH_FASTCALL,
    "importlib's _find_and_load, counting the imports in progress per thread for ophook."};

bool initializing(PyObject* spec) {
  PyRef flag = PyRef::steal(PyObject_GetAttrString(spec, "_initializing"));
  if (!flag) PyErr_Clear();
  return flag && flag.get() == Py_True;
}

/// The specs of modules whose import runs now (on any thread).
std::vector<PyObject*> imports_in_progress() {
  std::vector<PyObject*> specs;
  PyObject* modules = PyImport_GetModuleDict();  // borrowed
  PyObject *name, *module;
  Py_ssize_t pos = 0;
  while (modules != nullptr && PyDict_Next(modules, &pos, &name, &module)) {
    PyObject* spec = PyObject_GetAttrString(module, "__spec__");
    if (spec != nullptr && initializing(spec)) {
      specs.push_back(spec);
    } else {
      Py_XDECREF(spec);
      PyErr_Clear();
    }
  }
  return specs;
}

}  // namespace

bool detail::any_in_flight() {
  const auto done = std::remove_if(in_flight.begin(), in_flight.end(), [](PyObject* spec) {
    if (initializing(spec)) return false;
    Py_DECREF(spec);
    return true;
  });
  in_flight.erase(done, in_flight.end());
  g_in_flight = !in_flight.empty();
  return g_in_flight;
}

void install(PyObject* bootstrap) {
  if (guarded != nullptr) return;
  PyRef original = PyRef::steal(PyObject_GetAttrString(bootstrap, "_find_and_load"));
  if (!original) {
    PyErr_Clear();
    return;
  }
  guarded = PyCFunction_New(&find_and_load_def, original.get());
  if (guarded == nullptr || PyObject_SetAttrString(bootstrap, "_find_and_load", guarded) != 0) {
    PyErr_Clear();
    Py_CLEAR(guarded);
    return;
  }
  Py_INCREF(bootstrap);
  bootstrap_module = bootstrap;
  in_flight = imports_in_progress();
  detail::g_in_flight = !in_flight.empty();
}

void uninstall() {
  if (guarded == nullptr) return;
  PyRef current = PyRef::steal(PyObject_GetAttrString(bootstrap_module, "_find_and_load"));
  if (current.get() == guarded) {
    PyObject* original = PyCFunction_GET_SELF(guarded);
    if (PyObject_SetAttrString(bootstrap_module, "_find_and_load", original) != 0) PyErr_Clear();
  }
  PyErr_Clear();
  Py_CLEAR(guarded);
  Py_CLEAR(bootstrap_module);
  for (auto* spec : in_flight) Py_DECREF(spec);
  in_flight.clear();
  detail::g_in_flight = false;
}

}  // namespace ophook::py::import_guard
