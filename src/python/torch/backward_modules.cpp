#include "torch/backward_modules.hpp"

#include <algorithm>
#include <vector>

#include "ophook/recorder.hpp"
#include "torch/module_stack.hpp"

namespace ophook::py::backward_modules {
namespace {

thread_local std::vector<std::uint32_t> modules;  // name ids, innermost last
thread_local bool reset_queued = false;
PyObject* queue_callback = nullptr;

PyObject* reset(PyObject*, PyObject*) {
  modules.clear();
  reset_queued = false;
  Py_RETURN_NONE;
}

PyMethodDef reset_def = {"ophook_backward_modules_reset", reset, METH_NOARGS,
                         "Empties ophook's backward module stack (queued on the autograd engine)."};

void queue_reset() {
  if (reset_queued || queue_callback == nullptr) return;
  static PyObject* callback = PyCFunction_New(&reset_def, nullptr);
  PyRef queued = PyRef::steal(PyObject_CallOneArg(queue_callback, callback));
  if (queued) {
    reset_queued = true;
  } else {
    PyErr_Clear();  // not inside a backward pass after all: nothing to end
  }
}

std::uint32_t id_of(PyObject* id) {
  const auto value = PyLong_AsUnsignedLong(id);
  if (PyErr_Occurred()) PyErr_Clear();
  return static_cast<std::uint32_t>(value);
}

/// Whether module `inner` lies inside module `outer`, by their dotted paths.
bool inside(std::uint32_t inner, std::uint32_t outer) {
  const auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return false;
  const auto& inner_name = recorder->text(inner);
  const auto& outer_name = recorder->text(outer);
  return inner_name.size() > outer_name.size() && inner_name.starts_with(outer_name) &&
         inner_name[outer_name.size()] == '.';
}

PyObject* enter(PyObject* id, PyObject* const*, Py_ssize_t) {
  queue_reset();
  // Hooks on one tensor fire in the order they were registered, and an inner module's forward
  // ends (registering its hook on the shared output) before its parent's: the parent goes below
  // the children already entered.
  const auto name = id_of(id);
  auto at = modules.end();
  while (at != modules.begin() && inside(*(at - 1), name)) --at;
  modules.insert(at, name);
  Py_RETURN_NONE;
}

PyObject* exit(PyObject* id, PyObject* const*, Py_ssize_t) {
  // Leaves this module and what is inside it (an inner module whose inputs needed no gradient
  // never ran its own exit), but not a module entered since that lies outside it: at a tensor
  // between two modules the producer's backward may start before the consumer's ends.
  const auto name = id_of(id);
  for (auto i = modules.size(); i > 0; --i) {
    if (modules[i - 1] != name) continue;
    auto kept = modules.begin() + static_cast<std::ptrdiff_t>(i - 1);
    modules.erase(std::remove_if(kept, modules.end(), [&](std::uint32_t m) { return m == name || inside(m, name); }),
                  modules.end());
    break;
  }
  Py_RETURN_NONE;
}

template <PyObject* (*F)(PyObject*, PyObject* const*, Py_ssize_t)>
PyCFunction fastcall() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(F));
}

PyMethodDef enter_def = {"ophook_backward_enter", fastcall<&enter>(), METH_FASTCALL,
                         "A module's backward starts (its outputs' first gradient arrived)."};
PyMethodDef exit_def = {"ophook_backward_exit", fastcall<&exit>(), METH_FASTCALL,
                        "A module's backward ends (its inputs' gradients are done)."};

}  // namespace

std::uint32_t current() noexcept { return modules.empty() ? 0 : modules.back(); }

PyObject* hook_for(PyObject* module, bool entering) {
  PyRef id = PyRef::steal(PyLong_FromUnsignedLong(module_stack::name_id(module)));
  if (!id) return nullptr;
  return PyCFunction_New(entering ? &enter_def : &exit_def, id.get());
}

void set_engine_callback_queue(PyObject* callable) {
  Py_XINCREF(callable);
  Py_XDECREF(queue_callback);
  queue_callback = callable;
}

}  // namespace ophook::py::backward_modules
