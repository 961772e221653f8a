#include "torch/backward/backward_check.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ophook/log.hpp"
#include "ophook/process/run_facts.hpp"
#include "recording/call_recording.hpp"
#include "recording/nan_check.hpp"
#include "torch/backward/node_modules.hpp"
#include "torch/backward/node_sources.hpp"
#include "torch/module_stack.hpp"

namespace ophook::py::backward_check {
namespace {

bool checking = false;
// Per node type: the op id of `autograd.<type name>`, 0 for a type not hooked. Types held.
std::unordered_map<PyTypeObject*, std::uint32_t> ops_by_type;
// Per op id and module (node_finished's `bound`): the post hook registered on such nodes. Held.
std::unordered_map<std::uint64_t, PyObject*> hooks;
// Nodes hooked by the scopes running on this thread, each held by its scope (so its address is
// not reused while it is here).
thread_local std::unordered_set<PyObject*> hooked_here;

/// What the hooking cost, for summary.json (notes.backward_check). Counted under the GIL.
struct Totals {
  std::uint64_t passes = 0;
  std::uint64_t nodes_walked = 0;
  std::uint64_t nodes_hooked = 0;
  std::chrono::steady_clock::duration hooking{};
};
Totals totals;

void note_totals(core::Recorder& recorder) {
  recorder.facts().add_note("backward_check",
                    {{"passes", totals.passes},
                     {"nodes_walked", totals.nodes_walked},
                     {"nodes_hooked", totals.nodes_hooked},
                     {"hooking_ms", std::chrono::duration<double, std::milli>(totals.hooking).count()}});
}

/// Node types whose backward only moves or copies the gradients' elements (or fills with zeros):
/// they make no NaN/Inf from finite values. A sum (ExpandBackward0's sum_to) or a cast (ToCopy)
/// can overflow, so those are hooked.
bool only_moves_elements(std::string_view name) {
  static const std::unordered_set<std::string_view> names = {
      "ViewBackward0",   "UnsafeViewBackward0", "ReshapeAliasBackward0", "TBackward0",
      "TransposeBackward0", "TransposeBackward1", "PermuteBackward0",   "SqueezeBackward0",
      "SqueezeBackward1", "SqueezeBackward2",   "UnsqueezeBackward0",    "AliasBackward0",
      "CloneBackward0",  "SelectBackward0",     "SliceBackward0",        "CatBackward0",
      "SplitBackward0",  "SplitWithSizesBackward0", "UnbindBackward0",   "StackBackward0"};
  return names.contains(name);
}

/// Appends to `flags` torch.isfinite(t).all() of every floating tensor in `value` (a tensor, or a
/// sequence of them): 0-dim tensors, computed where `t` lies and read only for the verdict, so that
/// a node judged later waits for nothing and holds none of its saved tensors.
void finiteness_of(PyObject* torch, PyObject* value, PyObject* flags) {
  if (PyList_Check(value) || PyTuple_Check(value)) {
    PyRef items = PyRef::steal(PySequence_Fast(value, "saved"));
    if (!items) return PyErr_Clear();
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
      finiteness_of(torch, PySequence_Fast_GET_ITEM(items.get(), i), flags);
    }
    return;
  }
  static PyObject* is_floating_point_name = PyUnicode_InternFromString("is_floating_point");
  static PyObject* is_complex_name = PyUnicode_InternFromString("is_complex");
  static PyObject* isfinite_name = PyUnicode_InternFromString("isfinite");
  static PyObject* all_name = PyUnicode_InternFromString("all");
  PyRef floating = PyRef::steal(PyObject_CallMethodNoArgs(value, is_floating_point_name));
  PyRef complex = floating ? PyRef::steal(PyObject_CallMethodNoArgs(value, is_complex_name)) : PyRef();
  if (!floating || !complex) return PyErr_Clear();  // not a tensor
  if (floating.get() != Py_True && complex.get() != Py_True) return;
  PyRef finite = PyRef::steal(PyObject_CallMethodOneArg(torch, isfinite_name, value));
  PyRef all = finite ? PyRef::steal(PyObject_CallMethodNoArgs(finite.get(), all_name)) : PyRef();
  if (!all || PyList_Append(flags, all.get()) < 0) PyErr_Clear();
}

/// The culprit check's first step (nan_check.hpp) while a node's post hook runs: the node computes
/// from the forward tensors it saved as much as from the gradients it received, so its evidence is
/// whether each saved tensor is finite. Its record notes the forward call that made its node.
PyObject* gather_node_state(core::CallRecord& record) {
  static PyObject* torch = PyImport_ImportModule("torch");
  static PyObject* current_node = torch ? PyObject_GetAttrString(torch, "_C") : nullptr;
  static PyObject* current = current_node ? PyObject_GetAttrString(current_node, "_current_autograd_node") : nullptr;
  if (current == nullptr) return PyErr_Clear(), nullptr;
  BusyScope busy;  // torch.isfinite and the attribute reads are ophook's, not the program's calls
  PyRef node = PyRef::steal(PyObject_CallNoArgs(current));
  if (!node || node.get() == Py_None) return PyErr_Clear(), nullptr;
  PyObject* flags = PyList_New(0);
  PyRef names = PyRef::steal(PyObject_Dir(node.get()));
  for (Py_ssize_t i = 0; flags && names && i < PyList_GET_SIZE(names.get()); ++i) {
    PyObject* name = PyList_GET_ITEM(names.get(), i);
    const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
    if (text == nullptr || !std::string_view(text).starts_with("_saved_")) continue;
    PyRef saved = PyRef::steal(PyObject_GetAttr(node.get(), name));  // a freed one raises
    if (!saved) {
      PyErr_Clear();
      continue;
    }
    finiteness_of(torch, saved.get(), flags);
  }
  PyErr_Clear();
  const auto site = node_sources::site_of(node.get());
  record.forward_file_id = site.file_id, record.forward_func_id = site.func_id, record.forward_line = site.line;
  return flags;
}

/// The culprit check's verdict: a node whose saved tensors held NaN/Inf (weights an earlier step
/// made Inf, activations a received collective made NaN) was fed it and is no culprit.
bool fed_by_node_state(PyObject* flags) {
  if (flags == nullptr) return false;
  BusyScope busy;  // reading a flag is ophook's call, not the program's
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(flags); ++i) {
    const int truth = PyObject_IsTrue(PyList_GET_ITEM(flags, i));
    if (truth < 0) PyErr_Clear();
    if (truth == 0) return true;
  }
  return false;
}

constexpr CulpritCheck kNodeStateCheck{&gather_node_state, &fed_by_node_state};

/// The post hook: autograd calls it with (the gradients the node returned, those it received).
/// `bound` is a Python int: the op id of `autograd.<node type>`, and above its 32 bits the name id
/// of the module whose forward made the node.
PyObject* node_finished(PyObject* bound, PyObject* const* args, Py_ssize_t nargs) {
  auto* recorder = core::Recorder::get();
  if (!checking || nargs < 2 || !RecordingGate::open() || recorder == nullptr) Py_RETURN_NONE;
  auto& state = thread_state();
  if (state.busy || import_guard::importing(state) || state.in_kernel > 0) Py_RETURN_NONE;
  const std::uint64_t op_and_module = PyLong_AsUnsignedLongLong(bound);
  const auto op_id = static_cast<std::uint32_t>(op_and_module);
  const auto module = static_cast<std::uint32_t>(op_and_module >> 32);
  PyObject* returned = args[0];
  PyObject* received = args[1];
  auto capture = [&](ValueCapture& c) {
    if (PyTuple_Check(received)) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(received); ++i) c.value(PyTuple_GET_ITEM(received, i));
    }
    c.begin_kwargs();
  };
  auto ran = [&] {
    Py_INCREF(returned);
    return returned;
  };
  // A post hook runs only inside the autograd engine: the phase is backward without asking torch.
  PyRef result = PyRef::steal(record_call(*recorder, state, op_id, core::Phase::Backward, module, capture, ran, false,
                                          RecordUse::CheckOnly));
  if (!result) return nullptr;  // OPHOOK_NAN=raise: the FloatingPointError leaves the backward pass
  Py_RETURN_NONE;               // the node's gradients stay as they are
}

PyMethodDef node_hook_def = {"ophook_backward_check",
                             reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&node_finished)),
                             METH_FASTCALL, "OPHOOK_NAN's check of what an autograd node computed."};

/// The op id of `autograd.<name>` for nodes of `type` (borrowed, held from then on), or 0 where
/// they are not hooked.
std::uint32_t op_for_type(PyTypeObject* type) {
  auto found = ops_by_type.find(type);
  if (found != ops_by_type.end()) return found->second;
  std::uint32_t op_id = 0;
  PyRef name = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__name__"));
  const char* text = name && PyUnicode_Check(name.get()) ? PyUnicode_AsUTF8(name.get()) : nullptr;
  if (text == nullptr) PyErr_Clear();
  const std::string_view type_name = text ? text : "<unnamed>";
  auto* recorder = core::Recorder::get();
  if (recorder != nullptr && type_name != "AccumulateGrad" && type_name != "CompiledFunctionBackward" &&
      !only_moves_elements(type_name)) {
    op_id = recorder->op_id("autograd." + std::string(type_name), core::Level::TorchDispatch);
  }
  Py_INCREF(type);
  ops_by_type.emplace(type, op_id);
  return op_id;
}

/// The post hook for nodes of op `op_id` made inside `module` (borrowed), or nullptr.
PyObject* hook_for(std::uint32_t op_id, std::uint32_t module) {
  const std::uint64_t op_and_module = std::uint64_t{module} << 32 | op_id;
  auto found = hooks.find(op_and_module);
  if (found != hooks.end()) return found->second;
  PyRef bound = PyRef::steal(PyLong_FromUnsignedLongLong(op_and_module));
  PyObject* hook = bound ? PyCFunction_New(&node_hook_def, bound.get()) : nullptr;
  if (hook == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  hooks.emplace(op_and_module, hook);
  return hook;
}

/// The node a root stands for: a tensor's grad_fn, a GradientEdge's node; nullptr for a leaf.
PyRef node_of(PyObject* root) {
  static PyObject* grad_fn_name = PyUnicode_InternFromString("grad_fn");
  static PyObject* node_name = PyUnicode_InternFromString("node");
  PyRef node = PyRef::steal(PyObject_GetAttr(root, grad_fn_name));
  if (!node) {
    PyErr_Clear();
    node = PyRef::steal(PyObject_GetAttr(root, node_name));
    if (!node) PyErr_Clear();
  }
  if (node && node.get() == Py_None) return {};
  return node;
}

void add_roots(PyObject* roots, std::vector<PyRef>& pending) {
  if (roots == nullptr || roots == Py_None) return;
  if (PyRef node = node_of(roots)) {
    pending.push_back(std::move(node));
    return;
  }
  if (!PyList_Check(roots) && !PyTuple_Check(roots)) return;
  PyRef items = PyRef::steal(PySequence_Fast(roots, "roots"));
  if (!items) return PyErr_Clear();
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
    if (PyRef node = node_of(PySequence_Fast_GET_ITEM(items.get(), i))) pending.push_back(std::move(node));
  }
}

}  // namespace

void enable(bool on) {
  checking = on;
  set_culprit_check(on ? &kNodeStateCheck : nullptr);
  if (on) return;
  for (auto& [type, op_id] : ops_by_type) Py_DECREF(reinterpret_cast<PyObject*>(type));
  ops_by_type.clear();
  for (auto& [op_and_module, hook] : hooks) Py_DECREF(hook);
  hooks.clear();
}

bool enabled() noexcept { return checking; }

Scope::Scope(PyObject* args, PyObject* kwargs) {
  // A step OPHOOK_STEPS leaves out (or recording paused): nothing would be checked.
  if (!RecordingGate::open() || core::Recorder::get() == nullptr) return;
  PyObject* roots = args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0)
                                                                                         : nullptr;
  if (roots == nullptr && kwargs != nullptr && PyDict_Check(kwargs)) {
    roots = PyDict_GetItemString(kwargs, "tensors");
    if (roots == nullptr) roots = PyDict_GetItemString(kwargs, "outputs");
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<PyRef> pending;
  BusyScope busy;  // the walk's attribute reads are ophook's, not the program's calls
  add_roots(roots, pending);
  hook_graph(pending, node_modules::pass_can_name_modules());
  ++totals.passes;
  totals.hooking += std::chrono::steady_clock::now() - start;
}

void Scope::hook_graph(std::vector<PyRef>& pending, bool name_modules) {
  static PyObject* next_functions_name = PyUnicode_InternFromString("next_functions");
  static PyObject* register_hook_name = PyUnicode_InternFromString("register_hook");
  std::unordered_set<PyObject*> seen;
  std::vector<PyRef> walked;  // keeps each seen node's wrapper, and so its address, for the walk
  while (!pending.empty()) {
    PyRef node = std::move(pending.back());
    pending.pop_back();
    PyObject* n = node.get();
    if (n == Py_None || hooked_here.contains(n) || !seen.insert(n).second) continue;
    ++totals.nodes_walked;
    const auto op_id = op_for_type(Py_TYPE(n));
    const auto module = op_id != 0 && name_modules ? node_modules::module_of(n) : 0;
    PyObject* hook = op_id != 0 && module_stack::module_selected(module) ? hook_for(op_id, module) : nullptr;
    if (hook != nullptr) {
      PyRef handle = PyRef::steal(PyObject_CallMethodOneArg(n, register_hook_name, hook));
      if (handle) {
        hooked_here.insert(n);
        hooked_.emplace_back(PyRef::borrow(n), std::move(handle));
        ++totals.nodes_hooked;
      } else {
        static bool said = false;
        if (!std::exchange(said, true)) {
          core::log_warn("the backward NaN check cannot hook autograd nodes ({}): NaN/Inf born in backward "
                         "passes is not looked for", describe_pending_exception());
        }
        PyErr_Clear();
      }
    }
    PyRef next = PyRef::steal(PyObject_GetAttr(n, next_functions_name));
    walked.push_back(std::move(node));
    if (!next || !PyTuple_Check(next.get())) {
      PyErr_Clear();
      continue;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(next.get()); ++i) {
      PyObject* edge = PyTuple_GET_ITEM(next.get(), i);  // (node or None, input number)
      if (PyTuple_Check(edge) && PyTuple_GET_SIZE(edge) > 0 && PyTuple_GET_ITEM(edge, 0) != Py_None) {
        pending.push_back(PyRef::borrow(PyTuple_GET_ITEM(edge, 0)));
      }
    }
  }
}

Scope::~Scope() {
  if (hooked_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  static PyObject* remove_name = PyUnicode_InternFromString("remove");
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  for (auto& [node, handle] : hooked_) {
    hooked_here.erase(node.get());
    PyRef removed = PyRef::steal(PyObject_CallMethodNoArgs(handle.get(), remove_name));
    if (!removed) PyErr_Clear();
  }
  PyErr_Restore(type, value, traceback);
  totals.hooking += std::chrono::steady_clock::now() - start;
  if (auto* recorder = core::Recorder::get()) note_totals(*recorder);
}

}  // namespace ophook::py::backward_check
