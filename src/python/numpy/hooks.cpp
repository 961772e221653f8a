#include "numpy/hooks.hpp"

#include <array>

#include "numpy/pointer_table.hpp"
#include "ophook/log.hpp"
#include "recording/call_recording.hpp"

namespace ophook::py {
namespace {

using core::Level;

constexpr std::array<const char*, 5> kMethods = {"reduce", "accumulate", "reduceat", "outer", "at"};

struct PatchedCallable {
  PyObject* object = nullptr;  // strong reference while patched
  vectorcallfunc original = nullptr;
  PyObject* original_callable = nullptr;  // made for override rules on first use
  std::uint32_t op_id = 0;
  int nin = -1;  // a ufunc's inputs: positional arguments past them are outputs it writes into
  std::string name;
  std::array<std::uint32_t, kMethods.size()> method_op_ids{};  // ufuncs: registered on first call
};

struct PatchedMethod {
  PyMethodDef* def = nullptr;
  PyCFunction original = nullptr;
};

PointerTable<PatchedCallable> ufuncs;
PointerTable<PatchedCallable> dispatchers;
std::array<PatchedMethod, kMethods.size()> methods;

vectorcallfunc* vectorcall_slot(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  if (!PyType_HasFeature(type, Py_TPFLAGS_HAVE_VECTORCALL) || type->tp_vectorcall_offset <= 0) return nullptr;
  return reinterpret_cast<vectorcallfunc*>(reinterpret_cast<char*>(object) + type->tp_vectorcall_offset);
}

void capture_vectorcall_args(ValueCapture& capture, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  for (Py_ssize_t i = 0; i < nargs; ++i) capture.value(args[i]);
  capture.begin_kwargs();
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    Py_ssize_t size = 0;
    const char* name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(kwnames, i), &size);
    capture.key({name ? name : "?", name ? static_cast<size_t>(size) : 1});
    capture.value(args[nargs + i]);
  }
}

void capture_tuple_dict_args(ValueCapture& capture, PyObject* args, PyObject* kwargs) {
  for (Py_ssize_t i = 0; args && i < PyTuple_GET_SIZE(args); ++i) capture.value(PyTuple_GET_ITEM(args, i));
  capture.begin_kwargs();
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    capture.key(name ? name : "?");
    capture.value(value);
  }
}

/// The object an override rule receives as `original` for a patched callable.
PyObject* original_of(PatchedCallable& entry) {
  if (entry.original_callable == nullptr) {
    entry.original_callable = make_original_callable(
        [object = entry.object, function = entry.original](PyObject* args, PyObject* kwargs) {
          return call_vectorcall(function, object, args, kwargs);
        });
  }
  return entry.original_callable;
}

/// Runs an override rule for a call that arrived as a vectorcall.
PyObject* run_rule(PyObject* rule, PyObject* original, std::uint32_t op, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames) {
  if (original == nullptr) return nullptr;
  PyRef tuple = PyRef::steal(vectorcall_args_tuple(args, nargs));
  PyRef dict = PyRef::steal(vectorcall_kwargs_dict(args, nargs, kwnames));
  if (!tuple || !dict) return nullptr;
  return run_override(rule, original, op, tuple.get(), dict.get());
}

/// The shared body of the two vectorcall trampolines.
PyObject* hooked_vectorcall(const PointerTable<PatchedCallable>& table, PyObject* callable,
                            PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto& entry = *table.find(callable);  // only patched objects reach a trampoline
  const auto original = entry.original;
  const auto op = entry.op_id;
  const auto nin = entry.nin;
  return hooked_call(
      op,
      [&](ValueCapture& c) {
        capture_vectorcall_args(c, args, nargsf, kwnames);
        if (nin >= 0 && PyVectorcall_NARGS(nargsf) > nin) c.note_inputs_may_be_written();
      },
      [&] { return original(callable, args, nargsf, kwnames); },
      [&](PyObject* rule) {
        return run_rule(rule, original_of(entry), op, args, PyVectorcall_NARGS(nargsf), kwnames);
      });
}

PyObject* ufunc_trampoline(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return hooked_vectorcall(ufuncs, callable, args, nargsf, kwnames);
}

PyObject* dispatcher_trampoline(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return hooked_vectorcall(dispatchers, callable, args, nargsf, kwnames);
}

/// The op id of ufunc `self`'s method M, or 0 when self is not a patched ufunc.
template <std::size_t M>
std::uint32_t method_op(PyObject* self) {
  auto* entry = ufuncs.find(self);
  if (entry == nullptr) return 0;
  auto& id = entry->method_op_ids[M];
  if (id == 0) {
    if (auto* recorder = core::Recorder::get()) id = recorder->op_id(entry->name + "." + kMethods[M], Level::UfuncMethod);
  }
  return id;
}

/// The `original` given to override rules of method M of ufunc `self` (a new reference).
template <std::size_t M>
PyObject* original_method(PyObject* self) {
  const auto def = methods[M];
  return make_original_callable([self, def](PyObject* args, PyObject* kwargs) -> PyObject* {
    // The table entry is patched; call the saved implementation through a private copy of it.
    PyMethodDef copy = *def.def;
    copy.ml_meth = def.original;
    PyRef original = PyRef::steal(PyCFunction_NewEx(&copy, self, nullptr));
    return original ? PyObject_Call(original.get(), args, kwargs) : nullptr;
  });
}

template <std::size_t M>
PyObject* method_rule(PyObject* rule, PyObject* self, std::uint32_t op, PyObject* args, PyObject* kwargs) {
  PyRef original = PyRef::steal(original_method<M>(self));
  return original ? run_override(rule, original.get(), op, args, kwargs) : nullptr;
}

/// Whether ufunc method M writes into one of `nargs` positional arguments: at() into its first,
/// reduce/accumulate/reduceat into a positional `out` (outer takes out= only, seen as a keyword).
template <std::size_t M>
bool method_writes_positionally(Py_ssize_t nargs) {
  constexpr std::array<Py_ssize_t, kMethods.size()> kOutPosition = {3, 3, 4, -1, 0};
  return kOutPosition[M] >= 0 && nargs > kOutPosition[M];
}

template <std::size_t M>
PyObject* method_fastcall_trampoline(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const auto original = reinterpret_cast<_PyCFunctionFastWithKeywords>(reinterpret_cast<void*>(methods[M].original));
  const auto op = method_op<M>(self);
  if (op == 0) return original(self, args, nargs, kwnames);
  return hooked_call(
      op,
      [&](ValueCapture& c) {
        capture_vectorcall_args(c, args, static_cast<size_t>(nargs), kwnames);
        if (method_writes_positionally<M>(nargs)) c.note_inputs_may_be_written();
      },
      [&] { return original(self, args, nargs, kwnames); },
      [&](PyObject* rule) {
        PyRef tuple = PyRef::steal(vectorcall_args_tuple(args, nargs));
        PyRef dict = PyRef::steal(vectorcall_kwargs_dict(args, nargs, kwnames));
        return tuple && dict ? method_rule<M>(rule, self, op, tuple.get(), dict.get()) : nullptr;
      });
}

template <std::size_t M>
PyObject* method_keywords_trampoline(PyObject* self, PyObject* args, PyObject* kwargs) {
  const auto original = reinterpret_cast<PyCFunctionWithKeywords>(reinterpret_cast<void*>(methods[M].original));
  const auto op = method_op<M>(self);
  if (op == 0) return original(self, args, kwargs);
  return hooked_call(
      op,
      [&](ValueCapture& c) {
        capture_tuple_dict_args(c, args, kwargs);
        if (method_writes_positionally<M>(args ? PyTuple_GET_SIZE(args) : 0)) c.note_inputs_may_be_written();
      },
      [&] { return original(self, args, kwargs); },
      [&](PyObject* rule) { return method_rule<M>(rule, self, op, args, kwargs); });
}

template <std::size_t M>
PyObject* method_varargs_trampoline(PyObject* self, PyObject* args) {
  const auto original = methods[M].original;
  const auto op = method_op<M>(self);
  if (op == 0) return original(self, args);
  return hooked_call(
      op,
      [&](ValueCapture& c) {
        capture_tuple_dict_args(c, args, nullptr);
        if (method_writes_positionally<M>(args ? PyTuple_GET_SIZE(args) : 0)) c.note_inputs_may_be_written();
      },
      [&] { return original(self, args); },
      [&](PyObject* rule) { return method_rule<M>(rule, self, op, args, nullptr); });
}

template <std::size_t M>
PyCFunction trampoline_for(int flags) {
  if ((flags & (METH_FASTCALL | METH_KEYWORDS)) == (METH_FASTCALL | METH_KEYWORDS)) {
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(&method_fastcall_trampoline<M>));
  }
  if (flags == (METH_VARARGS | METH_KEYWORDS)) {
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(&method_keywords_trampoline<M>));
  }
  if (flags == METH_VARARGS) return &method_varargs_trampoline<M>;
  return nullptr;  // a calling convention we do not know: leave that method alone
}

template <std::size_t... M>
PyCFunction trampoline_for_index(std::size_t index, int flags, std::index_sequence<M...>) {
  PyCFunction out = nullptr;
  ((index == M ? (out = trampoline_for<M>(flags), 0) : 0), ...);
  return out;
}

int patch_table(PointerTable<PatchedCallable>& table,
                const std::vector<std::pair<PyObject*, std::string>>& objects, Level level, vectorcallfunc trampoline) {
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return 0;
  int patched = 0;
  for (const auto& [object, name] : objects) {
    auto* slot = vectorcall_slot(object);
    if (slot == nullptr || *slot == trampoline || table.contains(object)) continue;
    Py_INCREF(object);
    int nin = -1;
    if (level == Level::Ufunc) {
      PyRef value = PyRef::steal(PyObject_GetAttrString(object, "nin"));
      nin = value && PyLong_Check(value.get()) ? static_cast<int>(PyLong_AsLong(value.get())) : 0;  // 0: judged before
      PyErr_Clear();
    }
    table.insert(object, PatchedCallable{object, *slot, nullptr, recorder->op_id(name, level), nin, name, {}});
    *slot = trampoline;
    ++patched;
  }
  return patched;
}

int unpatch_table(PointerTable<PatchedCallable>& table) {
  int restored = 0;
  table.for_each([&](const void*, PatchedCallable& entry) {
    if (auto* slot = vectorcall_slot(entry.object)) *slot = entry.original;
    Py_XDECREF(entry.original_callable);
    Py_DECREF(entry.object);
    ++restored;
  });
  table.clear();
  return restored;
}

}  // namespace

int NumpyHooks::patch_ufuncs(const std::vector<std::pair<PyObject*, std::string>>& objects) {
  return patch_table(ufuncs, objects, Level::Ufunc, &ufunc_trampoline);
}

int NumpyHooks::patch_dispatchers(const std::vector<std::pair<PyObject*, std::string>>& objects) {
  return patch_table(dispatchers, objects, Level::ArrayFunction, &dispatcher_trampoline);
}

std::vector<std::string> NumpyHooks::patch_ufunc_methods(PyObject* ufunc_type) {
  std::vector<std::string> patched;
  if (!PyType_Check(ufunc_type)) return patched;
  for (PyMethodDef* def = reinterpret_cast<PyTypeObject*>(ufunc_type)->tp_methods; def && def->ml_name; ++def) {
    for (std::size_t m = 0; m < kMethods.size(); ++m) {
      if (std::string_view(def->ml_name) != kMethods[m] || methods[m].def != nullptr) continue;
      auto trampoline = trampoline_for_index(m, def->ml_flags, std::make_index_sequence<kMethods.size()>{});
      if (trampoline == nullptr) {
        core::log_debug("ufunc.{} has calling convention {:#x}: not hooked", def->ml_name, def->ml_flags);
        continue;
      }
      methods[m] = {def, def->ml_meth};
      def->ml_meth = trampoline;
      patched.emplace_back(def->ml_name);
    }
  }
  return patched;
}

int NumpyHooks::unpatch_all() {
  int restored = unpatch_table(ufuncs) + unpatch_table(dispatchers);
  for (auto& method : methods) {
    if (method.def == nullptr) continue;
    method.def->ml_meth = method.original;
    method = {};
    ++restored;
  }
  return restored;
}

int NumpyHooks::patched_count() {
  int methods_patched = 0;
  for (const auto& method : methods) methods_patched += method.def != nullptr;
  return static_cast<int>(ufuncs.size() + dispatchers.size()) + methods_patched;
}

}  // namespace ophook::py
