#include "torch/tensors/values.hpp"

#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "recording/value_capture.hpp"
#include "thread_state.hpp"

namespace ophook::py {
namespace {

/// The torch types these values are told apart by, held for the life of the process.
struct TorchTypes {
  PyTypeObject* size = nullptr;             // torch.Size
  PyTypeObject* untyped_storage = nullptr;  // torch.UntypedStorage
  PyTypeObject* typed_storage = nullptr;    // torch.storage.TypedStorage
  std::vector<PyTypeObject*> singleton_types;  // torch.dtype, torch.layout, torch.memory_format, torch.qscheme
};
TorchTypes torch_types;

/// torch.Size, and torch.return_types structseqs (torch.max(x, 0) → (values, indices)), are
/// tuples to the user: encode them as lists.
bool is_torch_tuple(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == torch_types.size) return true;
  return PyTuple_Check(object) && std::strncmp(type->tp_name, "torch.return_types.", 19) == 0;
}

/// Storages: their repr lists every element (and TypedStorage's warns that it is deprecated), so
/// they are described from their size, dtype and device instead.
bool capture_storage(ValueCapture& capture, PyObject* object) {
  const bool typed = torch_types.typed_storage && PyObject_TypeCheck(object, torch_types.typed_storage);
  if (!typed && !(torch_types.untyped_storage && PyObject_TypeCheck(object, torch_types.untyped_storage))) {
    return false;
  }
  BusyScope busy;
  PyRef untyped = typed ? PyRef::steal(PyObject_GetAttrString(object, "_untyped_storage")) : PyRef::borrow(object);
  PyRef nbytes = untyped ? PyRef::steal(PyObject_CallMethod(untyped.get(), "nbytes", nullptr)) : PyRef();
  PyErr_Clear();
  std::string repr = typed ? "torch.TypedStorage(" : "torch.UntypedStorage(";
  if (typed) repr += "dtype=" + attribute_str_or(object, "_dtype", "?") + ", ";
  repr += "nbytes=" + str_or(nbytes.get(), "?");
  repr += ", device='" + (untyped ? attribute_str_or(untyped.get(), "device", "?") : std::string("?")) + "')";
  capture.other(typed ? "torch.TypedStorage" : "torch.UntypedStorage", repr);
  return true;
}

/// dtypes, layouts, memory formats and qschemes are singletons: their repr ("torch.float32") is
/// computed once per object.
bool capture_singleton(ValueCapture& capture, PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  bool known = false;
  for (auto* t : torch_types.singleton_types) known = known || t == type;
  if (!known) return false;
  static std::unordered_map<PyObject*, std::string> reprs;
  auto it = reprs.find(object);
  if (it == reprs.end()) {
    BusyScope busy;
    PyRef repr = PyRef::steal(PyObject_Repr(object));
    const char* text = repr ? PyUnicode_AsUTF8(repr.get()) : nullptr;
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    Py_INCREF(object);  // the key stays valid
    it = reprs.emplace(object, text).first;
  }
  capture.other(type->tp_name, it->second);
  return true;
}

}  // namespace

bool enable_torch_value_capture(PyObject* torch) {
  if (torch_types.size != nullptr) return true;
  PyObject* size = torch_attribute(torch, "Size");
  if (size == nullptr || !PyType_Check(size)) {
    Py_XDECREF(size);
    return false;
  }
  torch_types.size = reinterpret_cast<PyTypeObject*>(size);
  for (const char* path : {"dtype", "layout", "memory_format", "qscheme"}) {
    PyObject* type = torch_attribute(torch, path);
    if (type != nullptr && PyType_Check(type)) {
      torch_types.singleton_types.push_back(reinterpret_cast<PyTypeObject*>(type));
    } else {
      Py_XDECREF(type);
      PyErr_Clear();
    }
  }
  // Storages are optional: without them, their values fall back to the generic description.
  for (auto [path, slot] : {std::pair{"UntypedStorage", &torch_types.untyped_storage},
                            std::pair{"storage.TypedStorage", &torch_types.typed_storage}}) {
    PyObject* type = torch_attribute(torch, path);
    if (type != nullptr && PyType_Check(type)) {
      *slot = reinterpret_cast<PyTypeObject*>(type);
    } else {
      Py_XDECREF(type);
      PyErr_Clear();
    }
  }
  return true;
}

bool capture_torch_non_tensor(ValueCapture& capture, PyObject* object) {
  if (is_torch_tuple(object)) {
    PyRef items = PyRef::steal(PyTuple_GetSlice(object, 0, PyTuple_GET_SIZE(object)));
    if (!items) {
      PyErr_Clear();
      return false;
    }
    capture.value(items.get());
    return true;
  }
  return capture_singleton(capture, object) || capture_storage(capture, object);
}

PyObject* torch_attribute(PyObject* torch, const char* dotted) {
  PyRef current = PyRef::borrow(torch);
  std::string path(dotted);
  std::size_t start = 0;
  while (current && start <= path.size()) {
    const auto end = path.find('.', start);
    const auto part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    current = PyRef::steal(PyObject_GetAttrString(current.get(), part.c_str()));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!current) return nullptr;
  PyObject* out = current.get();
  Py_INCREF(out);  // held for the life of the process
  return out;
}

}  // namespace ophook::py
