#include "overrides.hpp"

#include <new>
#include <unordered_map>
#include <vector>

#include "ophook/process/recorder.hpp"

namespace ophook::py {
namespace {

std::unordered_map<std::string, PyObject*> rules_by_name;  // strong references
// Per op id: resolved rule (borrowed from rules_by_name), with kUnresolved for "not looked up".
PyObject* const kUnresolved = reinterpret_cast<PyObject*>(1);
std::vector<PyObject*> rules_by_op;
bool any_rule = false;
bool inside_rule = false;

struct OriginalObject {
  PyObject_HEAD
  OriginalFunction function;
};

PyObject* original_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return reinterpret_cast<OriginalObject*>(self)->function(args, kwargs);
}

void original_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<OriginalObject*>(self)->function.~OriginalFunction();
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types hold a reference to their type
}

PyTypeObject* original_type() {
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {
        {Py_tp_call, reinterpret_cast<void*>(&original_call)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&original_dealloc)},
        {Py_tp_doc, const_cast<char*>("Calls the original operator, bypassing ophook's hooks and overrides.")},
        {0, nullptr}};
    static PyType_Spec spec = {"ophook.OriginalOperator", static_cast<int>(sizeof(OriginalObject)), 0,
                               Py_TPFLAGS_DEFAULT, slots};
    return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  }();
  return type;
}

PyObject* invoke_function() {
  static PyObject* invoke = [] {
    PyRef module = PyRef::steal(PyImport_ImportModule("ophook._overrides"));
    return module ? PyObject_GetAttrString(module.get(), "invoke") : nullptr;
  }();
  return invoke;
}

}  // namespace

bool has_overrides() noexcept { return any_rule; }

void set_override(const std::string& op_name, PyObject* rule) {
  Py_INCREF(rule);
  if (auto [it, fresh] = rules_by_name.emplace(op_name, rule); !fresh) {
    Py_DECREF(it->second);
    it->second = rule;
  }
  rules_by_op.clear();  // re-resolve every op id
  any_rule = true;
}

PyObject* override_for(std::uint32_t op_id) noexcept {
  if (inside_rule) return nullptr;
  if (op_id >= rules_by_op.size()) rules_by_op.resize(op_id + 1, kUnresolved);
  PyObject*& slot = rules_by_op[op_id];
  if (slot == kUnresolved) {
    slot = nullptr;
    if (auto* recorder = core::Recorder::get()) {
      if (auto it = rules_by_name.find(recorder->op(op_id).name); it != rules_by_name.end()) slot = it->second;
    }
  }
  return slot;
}

PyObject* make_original_callable(OriginalFunction function) {
  auto* type = original_type();
  if (type == nullptr) return nullptr;
  PyObject* self = type->tp_alloc(type, 0);
  if (self == nullptr) return nullptr;
  new (&reinterpret_cast<OriginalObject*>(self)->function) OriginalFunction(std::move(function));
  return self;
}

PyObject* run_override(PyObject* rule, PyObject* original, std::uint32_t op_id, PyObject* args, PyObject* kwargs) {
  PyObject* invoke = invoke_function();
  auto* recorder = core::Recorder::get();
  if (invoke == nullptr || recorder == nullptr) return nullptr;
  const auto& op = recorder->op(op_id);
  PyRef name = PyRef::steal(PyUnicode_FromString(op.name.c_str()));
  PyRef level = PyRef::steal(PyUnicode_FromStringAndSize(core::to_string(op.level).data(),
                                                          static_cast<Py_ssize_t>(core::to_string(op.level).size())));
  PyRef empty = PyRef::steal(PyDict_New());
  PyObject* call_args[] = {rule, original, name.get(), level.get(), args, kwargs ? kwargs : empty.get()};
  const bool was_inside = inside_rule;
  inside_rule = true;
  PyObject* result = PyObject_Vectorcall(invoke, call_args, 6, nullptr);
  inside_rule = was_inside;
  return result;
}

PyObject* call_vectorcall(vectorcallfunc function, PyObject* callable, PyObject* args, PyObject* kwargs) {
  const Py_ssize_t nargs = args ? PyTuple_GET_SIZE(args) : 0;
  const Py_ssize_t nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
  std::vector<PyObject*> stack(static_cast<std::size_t>(nargs + nkw));
  for (Py_ssize_t i = 0; i < nargs; ++i) stack[static_cast<std::size_t>(i)] = PyTuple_GET_ITEM(args, i);
  PyRef names = PyRef::steal(PyTuple_New(nkw));
  if (!names) return nullptr;
  PyObject *key, *value;
  Py_ssize_t pos = 0, k = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
    Py_INCREF(key);
    PyTuple_SET_ITEM(names.get(), k, key);
    stack[static_cast<std::size_t>(nargs + k++)] = value;
  }
  return function(callable, stack.data(), static_cast<size_t>(nargs), nkw ? names.get() : nullptr);
}

PyObject* vectorcall_args_tuple(PyObject* const* args, Py_ssize_t nargs) {
  PyObject* tuple = PyTuple_New(nargs);
  for (Py_ssize_t i = 0; tuple && i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(tuple, i, args[i]);
  }
  return tuple;
}

PyObject* vectorcall_kwargs_dict(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* dict = PyDict_New();
  const Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; dict && i < n; ++i) {
    if (PyDict_SetItem(dict, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
      Py_DECREF(dict);
      return nullptr;
    }
  }
  return dict;
}

}  // namespace ophook::py
