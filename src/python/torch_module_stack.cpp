#include "torch_module_stack.hpp"

#include <unordered_map>
#include <vector>

#include "ophook/recorder.hpp"
#include "thread_state.hpp"

namespace ophook::py::module_stack {
namespace {

struct Frame {
  PyObject* module;  // borrowed: alive while its forward runs
  std::uint32_t name_id;
};

thread_local std::vector<Frame> frames;

PyObject* jit_probe = nullptr;
PyTypeObject* traced_module_type = nullptr;
PyObject* jit_guard = nullptr;
thread_local bool jit_watch = false;  // the guard asked to see every forward on this thread

bool jit_at_work(PyObject* module) {
  if (PyObject_TypeCheck(module, traced_module_type)) return true;
  PyRef state = PyRef::steal(PyObject_CallNoArgs(jit_probe));
  PyErr_Clear();
  return state && state.get() != Py_None;
}

/// Lets the guard step the dispatch mode aside or back: at a forward's start when torch.jit is
/// at work, and at every start and end while the mode is aside.
void consult_jit_guard(PyObject* module, bool entering) {
  if (jit_guard == nullptr) return;
  if (!jit_watch && (!entering || !jit_at_work(module))) return;
  PyRef watch = PyRef::steal(PyObject_CallFunctionObjArgs(jit_guard, module, entering ? Py_True : Py_False, nullptr));
  if (watch) jit_watch = watch.get() == Py_True;
  PyErr_Clear();
}

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

std::uint32_t name_of(PyObject* module) {
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

}  // namespace

void set_module_namer(PyObject* callable) {
  Py_XINCREF(callable);
  Py_XDECREF(namer);
  namer = callable;
}

std::uint32_t current_module_id() noexcept { return frames.empty() ? 0 : frames.back().name_id; }

void set_jit_guard(PyObject* probe, PyObject* traced_type, PyObject* guard) {
  Py_XINCREF(probe);
  Py_XINCREF(traced_type);
  Py_XINCREF(guard);
  Py_XDECREF(jit_probe);
  Py_XDECREF(reinterpret_cast<PyObject*>(traced_module_type));
  Py_XDECREF(jit_guard);
  jit_probe = probe;
  traced_module_type = reinterpret_cast<PyTypeObject*>(traced_type);
  jit_guard = guard;
}

void clear_names() {
  for (auto& [weakref, module] : referents) Py_DECREF(weakref);
  referents.clear();
  names.clear();
}

PyObject* forward_pre_hook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs >= 1) {
    frames.push_back({args[0], name_of(args[0])});
    consult_jit_guard(args[0], /*entering=*/true);
  }
  Py_RETURN_NONE;
}

PyObject* forward_hook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1) Py_RETURN_NONE;
  // Pop up to and including this module: a forward that raised past inner modules whose hooks
  // did not run leaves nothing behind.
  for (auto i = frames.size(); i > 0; --i) {
    if (frames[i - 1].module == args[0]) {
      frames.resize(i - 1);
      break;
    }
  }
  consult_jit_guard(args[0], /*entering=*/false);
  Py_RETURN_NONE;
}

}  // namespace ophook::py::module_stack
