#include "torch/module_stack.hpp"

#include <memory>
#include <regex>
#include <vector>

#include "ophook/process/recorder.hpp"
#include "thread_state.hpp"
#include "torch/backward/backward_modules.hpp"
#include "torch/backward/node_modules.hpp"
#include "torch/backward_window.hpp"
#include "torch/libtorch_symbols.hpp"
#include "torch/module_names.hpp"

namespace ophook::py::module_stack {
namespace {

struct Frame {
  PyObject* module;  // borrowed: alive while its forward runs
  std::uint32_t name_id;
  bool recomputed;  // run during a backward pass: activation checkpointing's recomputation
};

bool in_backward_pass() noexcept { return libtorch_symbols::has_graph_task_id() && libtorch_symbols::in_backward_pass(); }

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

// Registers the backward hooks of a module forward: tracker(module, tensors_or_structure, is_output).
PyObject* backward_tracker = nullptr;

void track_backward(PyObject* module, PyObject* values, bool outputs) {
  if (backward_tracker == nullptr) return;
  BusyScope busy;  // the tracker's tensor hooks are not the program's calls
  PyRef done = PyRef::steal(
      PyObject_CallFunctionObjArgs(backward_tracker, module, values, outputs ? Py_True : Py_False, nullptr));
  if (!done) PyErr_Clear();
}

/// Tells node_modules, when it records, that this thread's innermost module changed.
void note_module_change() {
  if (node_modules::recording()) node_modules::module_changed(frames.empty() ? 0 : frames.back().name_id);
}

std::unique_ptr<std::regex> module_filter;
std::vector<std::int8_t> module_verdicts;  // by name id: -1 unknown, 0 left out, 1 selected

}  // namespace

void set_backward_tracker(PyObject* tracker) {
  Py_XINCREF(tracker);
  Py_XDECREF(backward_tracker);
  backward_tracker = tracker;
}

void set_module_filter(const std::string& pattern) {
  module_verdicts.clear();
  module_filter = pattern.empty() ? nullptr : std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
}

bool module_selected(std::uint32_t id) {
  if (!module_filter) return true;
  if (id == 0) return false;
  if (id >= module_verdicts.size()) module_verdicts.resize(id + 1, -1);
  auto& verdict = module_verdicts[id];
  if (verdict < 0) {
    const auto* recorder = core::Recorder::get();
    verdict = recorder != nullptr && std::regex_search(recorder->text(id), *module_filter) ? 1 : 0;
  }
  return verdict == 1;
}

std::uint32_t current_module_id(core::Phase phase) noexcept {
  // A forward recomputed inside backward (checkpointing) runs in its own module, not in the one
  // whose gradient is being computed.
  if (phase == core::Phase::Backward && (frames.empty() || !frames.back().recomputed)) {
    return backward_modules::current();
  }
  return frames.empty() ? 0 : frames.back().name_id;
}

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

PyObject* forward_pre_hook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (frames.empty()) {
    // An optimizer step that raised never ran its post-hook: a new forward pass ends its phase.
    thread_state().in_optimizer = 0;
    backward_window::outermost_forward_starts();
  }
  if (nargs >= 1) {
    frames.push_back({args[0], module_names::name_id(args[0]), in_backward_pass()});
    note_module_change();
    consult_jit_guard(args[0], /*entering=*/true);
    if (nargs >= 2) track_backward(args[0], args[1], /*outputs=*/false);
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
      note_module_change();
      break;
    }
  }
  consult_jit_guard(args[0], /*entering=*/false);
  if (nargs >= 3) track_backward(args[0], args[nargs - 1], /*outputs=*/true);
  if (frames.empty()) backward_window::outermost_forward_ended();
  Py_RETURN_NONE;
}

}  // namespace ophook::py::module_stack
