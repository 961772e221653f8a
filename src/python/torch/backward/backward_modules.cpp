#include "torch/backward/backward_modules.hpp"

#include <algorithm>
#include <vector>

#include "ophook/process/recorder.hpp"
#include "torch/module_names.hpp"

namespace ophook::py::backward_modules {
namespace {

thread_local std::vector<std::uint32_t> modules;  // name ids, innermost last
thread_local bool reset_queued = false;
PyObject* queue_callback = nullptr;
PyObject* graph_task_id = nullptr;  // torch._C._current_graph_task_id

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

/// Whether module `inner` lies inside module `outer`, by their dotted paths.
bool inside(std::uint32_t inner, std::uint32_t outer) {
  const auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return false;
  const auto& inner_name = recorder->text(inner);
  const auto& outer_name = recorder->text(outer);
  return inner_name.size() > outer_name.size() && inner_name.starts_with(outer_name) &&
         inner_name[outer_name.size()] == '.';
}

void enter(std::uint32_t name) {
  queue_reset();
  // Hooks on one tensor fire in the order they were registered, and an inner module's forward
  // ends (registering its hook on the shared output) before its parent's: the parent goes below
  // the children already entered.
  auto at = modules.end();
  while (at != modules.begin() && inside(*(at - 1), name)) --at;
  modules.insert(at, name);
}

void exit(std::uint32_t name) {
  // Leaves this module and what is inside it (an inner module whose inputs needed no gradient
  // never ran its own exit), but not a module entered since that lies outside it: at a tensor
  // between two modules the producer's backward may start before the consumer's ends.
  for (auto i = modules.size(); i > 0; --i) {
    if (modules[i - 1] != name) continue;
    auto kept = modules.begin() + static_cast<std::ptrdiff_t>(i - 1);
    modules.erase(std::remove_if(kept, modules.end(), [&](std::uint32_t m) { return m == name || inside(m, name); }),
                  modules.end());
    break;
  }
}

/// What one module forward's hooks share: the gradients that have arrived in the current
/// backward pass (graph task) of the `expected` tensors it hooked.
struct HookState {
  std::uint32_t module = 0;
  std::uint32_t expected = 0;
  bool entering = false;
  std::int64_t task = -1;
  std::uint32_t arrived = 0;
};
constexpr const char* kHookState = "ophook.backward_hook_state";

/// The hook on each tensor: the module's backward starts at the first gradient of a pass to
/// arrive at its outputs, and ends when the last one expected has arrived at its inputs.
PyObject* gradient_arrived(PyObject* capsule, PyObject* const*, Py_ssize_t) {
  auto* state = static_cast<HookState*>(PyCapsule_GetPointer(capsule, kHookState));
  if (state == nullptr) return nullptr;
  // An error here would fail the program's backward pass: a pass not told apart counts as -1.
  std::int64_t task = -1;
  if (graph_task_id != nullptr) {
    PyRef id = PyRef::steal(PyObject_CallNoArgs(graph_task_id));
    if (id) task = PyLong_AsLongLong(id.get());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      task = -1;
    }
  }
  if (task != state->task) state->task = task, state->arrived = 0;
  ++state->arrived;
  if (state->entering && state->arrived == 1) enter(state->module);
  if (!state->entering && state->arrived == state->expected) exit(state->module);
  Py_RETURN_NONE;
}

PyMethodDef hook_def = {"ophook_backward_hook",
                        reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gradient_arrived)), METH_FASTCALL,
                        "A module's gradient arrived: its backward starts (outputs) or, with the last, ends (inputs)."};

}  // namespace

std::uint32_t current() noexcept { return modules.empty() ? 0 : modules.back(); }

PyObject* hook_for(PyObject* module, bool entering, std::uint32_t expected) {
  auto* state = new HookState{module_names::name_id(module), expected, entering};
  PyRef capsule = PyRef::steal(PyCapsule_New(state, kHookState, [](PyObject* self) {
    delete static_cast<HookState*>(PyCapsule_GetPointer(self, kHookState));
  }));
  if (!capsule) {
    delete state;
    return nullptr;
  }
  return PyCFunction_New(&hook_def, capsule.get());
}

void set_engine(PyObject* callback_queue, PyObject* current_graph_task_id) {
  for (auto [held, given] : {std::pair{&queue_callback, callback_queue}, std::pair{&graph_task_id, current_graph_task_id}}) {
    Py_XINCREF(given);
    Py_XDECREF(*held);
    *held = given;
  }
}

}  // namespace ophook::py::backward_modules
