#include "torch/module_names.hpp"

#include <unordered_map>

#include "ophook/process/recorder.hpp"
#include "thread_state.hpp"

namespace ophook::py::module_names {
namespace {

struct Named {
  std::uint32_t name_id = 0;
  PyObject* weakref = nullptr;  // owned; its callback forgets the module when it dies
};

PyObject* namer = nullptr;
std::unordered_map<PyObject*, Named> names;          // module → name
std::unordered_map<PyObject*, PyObject*> referents;  // weakref → module

PyObject* forget(PyObject*, PyObject* weakref) {
  if (auto it = referents.find(weakref); it != referents.end()) {
    names.erase(it->second);
    referents.erase(it);
    Py_DECREF(weakref);
  }
  Py_RETURN_NONE;
}

PyMethodDef forget_def = {"_ophook_forget_module", reinterpret_cast<PyCFunction>(&forget), METH_O, nullptr};

PyObject* forget_callback() {
  static PyObject* callback = PyCFunction_New(&forget_def, nullptr);
  return callback;
}

}  // namespace

std::uint32_t name_id(PyObject* module) {
  if (auto it = names.find(module); it != names.end()) return it->second.name_id;
  auto* recorder = core::Recorder::get();
  if (namer == nullptr || recorder == nullptr) return 0;
  std::uint32_t id = 0;
  {
    BusyScope busy;  // the namer walks named_children(): not the program's calls
    PyRef name = PyRef::steal(PyObject_CallOneArg(namer, module));
    const char* text = name && PyUnicode_Check(name.get()) ? PyUnicode_AsUTF8(name.get()) : nullptr;
    if (text == nullptr) {
      PyErr_Clear();
      return 0;
    }
    id = recorder->intern(text);
  }
  PyObject* weakref = PyWeakref_NewRef(module, forget_callback());
  if (weakref == nullptr) {
    PyErr_Clear();  // a module type without weakref support: name it again on each forward
    return id;
  }
  names[module] = {id, weakref};
  referents[weakref] = module;
  return id;
}

void set_module_namer(PyObject* callable) {
  Py_XINCREF(callable);
  Py_XDECREF(namer);
  namer = callable;
}

void clear_names() {
  for (auto& [weakref, module] : referents) Py_DECREF(weakref);
  referents.clear();
  names.clear();
}

}  // namespace ophook::py::module_names
