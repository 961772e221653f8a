#include "torch/handlers.hpp"

#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "recording/call_recording.hpp"
#include "torch/backward/backward_check.hpp"
#include "torch/backward/node_sources.hpp"
#include "torch/backward_window.hpp"
#include "torch/libtorch_symbols.hpp"
#include "torch/module_stack.hpp"

namespace ophook::py::torch_handlers {
namespace {

using core::Level;

/// A func object's op and the callable that runs it (OpOverload._op skips OpOverload.__call__'s
/// Python frame). Both held strongly so that their addresses are never reused while cached.
struct OpTarget {
  std::uint32_t op_id = 0;
  PyObject* target = nullptr;
};

struct PairHash {
  std::size_t operator()(const std::pair<PyObject*, PyObject*>& p) const noexcept {
    return std::hash<PyObject*>()(p.first) * 31 + std::hash<PyObject*>()(p.second);
  }
};

constexpr std::size_t kMaxCached = 1 << 16;  // funcs made on the fly (closures) are not cached past this

PyObject* function_namer = nullptr;
PyObject* dispatch_namer = nullptr;
// Where libtorch_symbols lacks the C++ function: torch._C._current_graph_task_id (-1 outside a
// backward pass), or on torch releases before it torch._C._current_autograd_node (None outside a
// node: ops in the engine's final callbacks then count as forward).
PyObject* backward_probe = nullptr;
bool probe_returns_node = false;
// OPHOOK_COMPILE=ignore: code objects of the frames that run a torch.compile'd callable
// (Dynamo's compile_wrapper); calls made below one of them pass through unrecorded.
std::vector<PyObject*> compiled_region_markers;
std::vector<std::int8_t> backward_entries;  // by op id: -1 unknown, 0 no, 1 starts a backward pass
PyObject* backward_observer = nullptr;     // held; set_backward_observer
PyObject* self_name = nullptr;
PyObject* name_name = nullptr;
std::unordered_map<PyObject*, std::uint32_t> function_ops;  // func → op (func held)
std::unordered_map<PyObject*, OpTarget> dispatch_ops;      // func → op, target (both held)
// Property accessors arrive as fresh method-wrappers (Tensor.grad.__get__): keyed by the
// descriptor they wrap and the slot name.
std::unordered_map<std::pair<PyObject*, PyObject*>, std::uint32_t, PairHash> accessor_ops;

/// Calls namer(func) under a BusyScope; returns the result or nullptr (error cleared).
PyRef ask(PyObject* namer, PyObject* func) {
  if (namer == nullptr) return {};
  BusyScope busy;
  PyRef result = PyRef::steal(PyObject_CallOneArg(namer, func));
  if (!result) PyErr_Clear();
  return result;
}

/// Collectives are recorded at level collective, with their groups and read at their completion
/// (collectives/): c10d's ops, and the functional collectives, whose outputs are complete only at
/// their wait_tensor (reading them as they return would read what the op has not written yet).
/// Passed on at the other levels.
bool recorded_as_collective(PyObject* name) {
  if (name == nullptr || !PyUnicode_Check(name)) return false;
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr) {
    PyErr_Clear();
    return false;
  }
  std::string_view op(text);
  if (op.starts_with("torch.ops.")) op.remove_prefix(std::string_view("torch.ops.").size());
  return op.starts_with("c10d.") || op.starts_with("_c10d_functional");
}

std::uint32_t op_named(PyObject* name, Level level) {
  auto* recorder = core::Recorder::get();
  const char* text = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  if (text == nullptr) PyErr_Clear();
  if (recorder == nullptr) return 0;
  return recorder->op_id(text ? text : (level == Level::TorchFunction ? "torch.<unnamed>" : "aten.<unnamed>"), level);
}

std::uint32_t accessor_op(PyObject* func) {
  PyRef owner = PyRef::steal(PyObject_GetAttr(func, self_name));
  PyRef slot = PyRef::steal(PyObject_GetAttr(func, name_name));
  if (!owner || !slot || !PyUnicode_CheckExact(slot.get())) {
    PyErr_Clear();
    return op_named(ask(function_namer, func).get(), Level::TorchFunction);
  }
  // A method-wrapper's __name__ is a fresh string on every access: the interned one is the key.
  PyObject* interned = slot.release();
  PyUnicode_InternInPlace(&interned);
  slot = PyRef::steal(interned);
  const std::pair key{owner.get(), slot.get()};
  if (auto it = accessor_ops.find(key); it != accessor_ops.end()) return it->second;
  const auto id = op_named(ask(function_namer, func).get(), Level::TorchFunction);
  if (id == 0 || accessor_ops.size() >= kMaxCached) return id;
  Py_INCREF(key.first), Py_INCREF(key.second);
  accessor_ops.emplace(key, id);
  return id;
}

std::uint32_t function_op(PyObject* func) {
  if (Py_IS_TYPE(func, &_PyMethodWrapper_Type)) return accessor_op(func);
  if (auto it = function_ops.find(func); it != function_ops.end()) return it->second;
  PyRef name = ask(function_namer, func);
  if (recorded_as_collective(name.get())) return 0;
  const auto id = op_named(name.get(), Level::TorchFunction);
  if (id == 0 || function_ops.size() >= kMaxCached) return id;
  Py_INCREF(func);
  function_ops.emplace(func, id);
  return id;
}

OpTarget dispatch_op(PyObject* func) {
  if (auto it = dispatch_ops.find(func); it != dispatch_ops.end()) return it->second;
  PyRef answer = ask(dispatch_namer, func);
  OpTarget out{0, func};
  if (answer && PyTuple_Check(answer.get()) && PyTuple_GET_SIZE(answer.get()) == 2) {
    PyObject* name = PyTuple_GET_ITEM(answer.get(), 0);
    if (recorded_as_collective(name)) return {0, func};
    out.op_id = op_named(name, Level::TorchDispatch);
    PyObject* target = PyTuple_GET_ITEM(answer.get(), 1);
    if (PyCallable_Check(target)) out.target = target;
  } else {
    out.op_id = op_named(nullptr, Level::TorchDispatch);
  }
  if (out.op_id == 0 || dispatch_ops.size() >= kMaxCached) return {out.op_id, func};
  Py_INCREF(func), Py_INCREF(out.target);
  dispatch_ops.emplace(func, out);
  return out;
}

/// True while a torch.compile'd callable runs on this thread: one of the marker frames is on the
/// stack. A walk of the stack, paid only for recorded calls and only under the ignore and record
/// policies.
bool in_compiled_region() { return running_below(compiled_region_markers); }

bool starts_backward(std::uint32_t op_id) {
  const auto* recorder = core::Recorder::get();
  if (op_id == 0 || recorder == nullptr) return false;
  if (op_id >= backward_entries.size()) backward_entries.resize(op_id + 1, -1);
  auto& known = backward_entries[op_id];
  if (known < 0) {
    const auto& name = recorder->op(op_id).name;
    known = name == "torch.Tensor.backward" || name == "torch.autograd.backward" || name == "torch.autograd.grad";
  }
  return known == 1;
}

void capture_call_args(ValueCapture& capture, PyObject* args, PyObject* kwargs) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) capture.value(PyTuple_GET_ITEM(args, i));
  capture.begin_kwargs();
  if (kwargs == nullptr) return;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs, &pos, &key, &value)) {
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (name == nullptr) PyErr_Clear();
    capture.key(name ? name : "?");
    capture.value(value);
  }
}

/// The shared body: normalizes (func, args, kwargs), then passes the call through or records it.
/// `argv` is what torch passes to the mode's bound handler: (func, types[, args[, kwargs]]).
template <typename Resolve>
PyObject* handle(PyObject* const* argv, Py_ssize_t nargs, Resolve&& resolve) {
  if (nargs < 2) {
    PyErr_SetString(PyExc_TypeError, "ophook torch handler: expected (func, types, args, kwargs)");
    return nullptr;
  }
  PyObject* func = argv[0];
  PyRef args_ref;
  PyObject* args = nargs > 2 ? argv[2] : nullptr;
  if (args == nullptr || !PyTuple_Check(args)) {
    args_ref = PyRef::steal(args == nullptr || args == Py_None ? PyTuple_New(0) : PySequence_Tuple(args));
    if (!args_ref) return nullptr;
    args = args_ref.get();
  }
  PyObject* kwargs = nargs > 3 && argv[3] != Py_None ? argv[3] : nullptr;
  if (kwargs != nullptr && !PyDict_Check(kwargs)) {
    PyErr_SetString(PyExc_TypeError, "ophook torch handler: kwargs must be a dict");
    return nullptr;
  }
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) == 0) kwargs = nullptr;  // what func(*args) would pass
  const OpTarget resolved = resolve(func);
  // Plain variables rather than a structured binding: clang 14 cannot capture those in lambdas.
  const std::uint32_t op_id = resolved.op_id;
  PyObject* const target = resolved.target;
  auto call_original = [&] { return PyObject_Call(target, args, kwargs); };
  if (op_id == 0) return call_original();
  PyObject* rule = has_overrides() ? override_for(op_id) : nullptr;
  ThreadState* state = nullptr;
  auto* recorder = recorder_for(op_id, state);
  if ((rule == nullptr && recorder == nullptr) || in_compiled_region() || (state != nullptr && state->in_kernel > 0)) {
    return call_original();
  }
  auto capture = [&](ValueCapture& c) { capture_call_args(c, args, kwargs); };
  // An @ophook.override rule gets the op itself as `original`: inside this handler the mode is
  // off, so calling it runs the real op.
  auto run_rule = [&] { return run_override(rule, target, op_id, args, kwargs); };
  core::Phase phase = core::Phase::None;
  std::uint32_t module = 0;
  if (recorder != nullptr) {
    phase = current_phase(*state);
    module = module_stack::current_module_id(phase);
    if (!module_stack::module_selected(module)) recorder = nullptr;  // OPHOOK_MODULES
  }
  if (recorder == nullptr) return rule == nullptr ? call_original() : run_rule();
  // The backward check names a culprit node's forward call: forward calls note where autograd's
  // counter stands as they start (node_sources), with the line found here once.
  SourceSite site;
  const SourceSite* known_site = nullptr;
  if (phase == core::Phase::Forward && node_sources::recording() && recorder->config().stack) {
    if (locate_source(site, *recorder) == CallOrigin::TensorRebuild) return rule == nullptr ? call_original() : run_rule();
    node_sources::call_starts(site);
    known_site = &site;
  }
  if (rule == nullptr) {
    return record_call(*recorder, *state, op_id, phase, module, capture, call_original, false, RecordUse::Recorded,
                       known_site);
  }
  return record_call(*recorder, *state, op_id, phase, module, capture, run_rule, true, RecordUse::Recorded, known_site);
}

}  // namespace

core::Phase current_phase(const ThreadState& state) {
  bool backward = false;
  if (libtorch_symbols::has_graph_task_id()) {
    backward = libtorch_symbols::in_backward_pass();
  } else if (backward_probe != nullptr) {
    PyRef answer = PyRef::steal(PyObject_CallNoArgs(backward_probe));
    if (answer && probe_returns_node) {
      backward = answer.get() != Py_None;
    } else if (answer) {
      backward = PyLong_AsLong(answer.get()) != -1;
    }
    if (PyErr_Occurred()) PyErr_Clear();
  }
  if (backward) return core::Phase::Backward;
  return state.in_optimizer > 0 ? core::Phase::Optimizer : core::Phase::Forward;
}

void set_compiled_region_markers(const std::vector<PyObject*>& codes) {
  for (auto* code : compiled_region_markers) Py_DECREF(code);
  compiled_region_markers = codes;
  for (auto* code : compiled_region_markers) Py_INCREF(code);
}

bool configure(PyObject* torch, PyObject* function_namer_, PyObject* dispatch_namer_) {
  if (self_name == nullptr) {
    self_name = PyUnicode_InternFromString("__self__");
    name_name = PyUnicode_InternFromString("__name__");
  }
  Py_XINCREF(function_namer_), Py_XDECREF(function_namer), function_namer = function_namer_;
  Py_XINCREF(dispatch_namer_), Py_XDECREF(dispatch_namer), dispatch_namer = dispatch_namer_;
  libtorch_symbols::find(torch);
  if (backward_probe == nullptr) {
    PyRef c = PyRef::steal(PyObject_GetAttrString(torch, "_C"));
    for (const char* name : {"_current_graph_task_id", "_current_autograd_node"}) {
      backward_probe = c ? PyObject_GetAttrString(c.get(), name) : nullptr;
      PyErr_Clear();
      probe_returns_node = std::string_view(name) == "_current_autograd_node";
      if (backward_probe != nullptr) break;
    }
  }
  return libtorch_symbols::has_graph_task_id() || backward_probe != nullptr;
}

void clear_caches() {
  for (auto& [func, id] : function_ops) Py_DECREF(func);
  function_ops.clear();
  for (auto& [func, entry] : dispatch_ops) Py_DECREF(func), Py_DECREF(entry.target);
  dispatch_ops.clear();
  for (auto& [key, id] : accessor_ops) Py_DECREF(key.first), Py_DECREF(key.second);
  accessor_ops.clear();
}

void set_backward_observer(PyObject* observer) {
  if (observer == Py_None) observer = nullptr;
  Py_XINCREF(observer);
  Py_XDECREF(backward_observer);
  backward_observer = observer;
}

PyObject* on_torch_function(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  auto resolve = [](PyObject* func) { return OpTarget{function_op(func), func}; };
  if ((!backward_check::enabled() && backward_observer == nullptr) || nargs < 1 ||
      !starts_backward(function_op(args[0]))) {
    return handle(args, nargs, resolve);
  }
  backward_window::backward_seen();
  if (backward_observer != nullptr && nargs > 2) {
    PyRef seen = PyRef::steal(PyObject_CallOneArg(backward_observer, args[2]));
    if (!seen) PyErr_Clear();  // the monitor's trouble never becomes the program's
  }
  if (!backward_check::enabled()) return handle(args, nargs, resolve);
  backward_check::Scope check(nargs > 2 ? args[2] : nullptr, nargs > 3 ? args[3] : nullptr);
  return handle(args, nargs, resolve);
}

PyObject* on_torch_dispatch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return handle(args, nargs, dispatch_op);
}

}  // namespace ophook::py::torch_handlers
