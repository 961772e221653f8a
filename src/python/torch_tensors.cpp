#include "torch_tensors.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ophook/strided_copy.hpp"
#include "thread_state.hpp"
#include "torch_dtypes.hpp"
#include "value_capture.hpp"

namespace ophook::py {
namespace {

/// torch objects that capture compares against, held for the life of the process.
struct TorchObjects {
  PyTypeObject* tensor_base = nullptr;  // torch._C.TensorBase: every tensor is one
  PyTypeObject* size = nullptr;         // torch.Size
  PyObject* strided = nullptr;          // torch.strided (the layout object)
  PyObject* plain_dispatch = nullptr;   // torch._C._disabled_torch_dispatch_impl
  PyTypeObject* untyped_storage = nullptr;  // torch.UntypedStorage
  PyTypeObject* typed_storage = nullptr;    // torch.storage.TypedStorage
  std::vector<PyTypeObject*> singleton_types;  // torch.dtype, torch.layout, torch.memory_format, torch.qscheme
};
TorchObjects torch_objects;

/// Interned attribute names, so that each lookup skips building a string.
struct Names {
  PyObject *dtype, *shape, *is_cpu, *layout, *device, *stride, *data_ptr, *is_neg, *is_conj, *resolve_neg,
      *resolve_conj, *is_nested, *torch_dispatch;
};
Names names;

bool intern_names() {
  auto n = [](const char* s) { return PyUnicode_InternFromString(s); };
  names = {n("dtype"),        n("shape"),       n("is_cpu"),      n("layout"),       n("device"),
           n("stride"),       n("data_ptr"),    n("is_neg"),      n("is_conj"),      n("resolve_neg"),
           n("resolve_conj"), n("is_nested"),   n("__torch_dispatch__")};
  return names.torch_dispatch != nullptr;
}

/// Whether tensors of a type keep their elements in their own memory: torch.Tensor,
/// nn.Parameter and subclasses that do not take over dispatch. Wrapper subclasses (FakeTensor,
/// DTensor, FunctionalTensor, NJT …) get a spec only.
struct TypeVerdict {
  bool readable = false;
  std::uint32_t reason_id = 0;
};

const TypeVerdict& type_verdict(core::Recorder& recorder, PyTypeObject* type) {
  static std::unordered_map<PyTypeObject*, TypeVerdict> cache;
  if (auto it = cache.find(type); it != cache.end()) return it->second;
  TypeVerdict verdict;
  PyRef dispatch = PyRef::steal(PyObject_GetAttr(reinterpret_cast<PyObject*>(type), names.torch_dispatch));
  PyErr_Clear();
  verdict.readable = dispatch.get() == torch_objects.plain_dispatch;
  if (!verdict.readable) {
    verdict.reason_id = recorder.intern(std::string("tensor subclass ") + type->tp_name + " with its own dispatch: spec only");
  }
  Py_INCREF(type);  // the key outlives any reuse of its address
  return cache.emplace(type, verdict).first->second;
}

PyRef attr(PyObject* object, PyObject* name) {
  PyRef value = PyRef::steal(PyObject_GetAttr(object, name));
  if (!value) PyErr_Clear();
  return value;
}

PyRef call(PyObject* object, PyObject* method) {
  PyRef value = PyRef::steal(PyObject_CallMethodNoArgs(object, method));
  if (!value) PyErr_Clear();
  return value;
}

/// Reads a tuple of Python ints (a torch.Size or a stride tuple); false for symbolic sizes.
bool read_ints(PyObject* tuple, std::vector<std::int64_t>& out) {
  if (tuple == nullptr || !PyTuple_Check(tuple)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  out.resize(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    if (!PyLong_Check(item)) return false;
    out[static_cast<std::size_t>(i)] = PyLong_AsLongLong(item);
    if (out[static_cast<std::size_t>(i)] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

bool is_true(const PyRef& value) { return value.get() == Py_True; }

/// Why a tensor whose sizes or memory could not be read has no data.
std::uint32_t diagnose(core::Recorder& recorder, PyObject* tensor) {
  if (is_true(attr(tensor, names.is_nested))) return recorder.intern("nested tensor: spec only");
  return recorder.intern("tensor memory not readable: spec only");
}

/// Copies the tensor's elements (C order, file dtype) into `out`. Conjugate and negative views
/// are materialized first (resolve_conj/resolve_neg), so the bytes are the values the tensor
/// stands for. Returns false when the memory cannot be read.
bool copy_elements(PyObject* tensor, const TorchDtype& dtype, core::ArrayCapture& out) {
  PyRef source = PyRef::borrow(tensor);
  if (dtype.complex && is_true(call(source.get(), names.is_conj))) source = call(source.get(), names.resolve_conj);
  if (source && is_true(call(source.get(), names.is_neg))) source = call(source.get(), names.resolve_neg);
  if (!source) return false;
  std::vector<std::int64_t> strides;
  PyRef stride_tuple = call(source.get(), names.stride);
  if (!read_ints(stride_tuple.get(), strides) || strides.size() != out.shape.size()) return false;
  PyRef pointer = call(source.get(), names.data_ptr);
  if (!pointer) return false;
  const auto address = PyLong_AsUnsignedLongLong(pointer.get());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  std::size_t count = 1;
  for (auto n : out.shape) count *= static_cast<std::size_t>(n);
  if (count > 0 && address == 0) return false;
  for (auto& s : strides) s *= static_cast<std::int64_t>(dtype.item_size);
  out.nbytes = count * dtype.saved_item_size;
  out.data = std::make_unique_for_overwrite<std::byte[]>(out.nbytes);
  const auto* src = reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address));
  if (dtype.widen == nullptr) {
    core::strided_copy(out.data.get(), src, out.shape, strides, dtype.item_size);
  } else {
    auto packed = std::make_unique_for_overwrite<std::byte[]>(count * dtype.item_size);
    core::strided_copy(packed.get(), src, out.shape, strides, dtype.item_size);
    dtype.widen(out.data.get(), packed.get(), count);
  }
  out.captured = true;
  return true;
}

std::uint32_t unknown_dtype(core::Recorder& recorder) {
  static const std::uint32_t id = recorder.intern_dtype({"unknown", "", ""});
  return id;
}

void capture_tensor(ValueCapture& capture, PyObject* tensor) {
  if (auto alias = capture.alias_of(tensor); alias >= 0) {
    core::ArrayCapture copy;
    const auto& first = capture.record().arrays[static_cast<std::size_t>(alias)];
    copy.shape = first.shape;
    copy.dtype_id = first.dtype_id;
    copy.device_id = first.device_id;
    copy.alias_of = alias;
    capture.add_array(tensor, std::move(copy));
    return;
  }
  BusyScope busy;  // attribute reads may reach torch's Python code (and its modes)
  auto& recorder = capture.recorder();
  core::ArrayCapture out;
  const TorchDtype* dtype = nullptr;
  if (PyRef dtype_object = attr(tensor, names.dtype)) dtype = torch_dtype(recorder, dtype_object.get());
  out.dtype_id = dtype ? dtype->dtype_id : unknown_dtype(recorder);
  PyRef shape = attr(tensor, names.shape);
  if (dtype == nullptr || !read_ints(shape.get(), out.shape)) {
    out.shape.clear();
    out.no_data_reason_id = dtype ? diagnose(recorder, tensor) : recorder.intern("tensor dtype not readable: spec only");
    capture.add_array(tensor, std::move(out));
    return;
  }
  if (!is_true(attr(tensor, names.is_cpu))) {
    PyRef device = attr(tensor, names.device);
    const auto where = str_or(device.get(), "?");
    out.device_id = recorder.intern(where);
    out.no_data_reason_id = recorder.intern("tensor on device " + where + ": spec only");
  } else if (PyRef layout = attr(tensor, names.layout); layout.get() != torch_objects.strided) {
    out.no_data_reason_id = recorder.intern("layout " + str_or(layout.get(), "?") + ": spec only");
  } else if (const auto& verdict = type_verdict(recorder, Py_TYPE(tensor)); !verdict.readable) {
    out.no_data_reason_id = verdict.reason_id;
  } else if (dtype->reason_id != 0) {
    out.no_data_reason_id = dtype->reason_id;
  } else if (capture.copy_data() && !copy_elements(tensor, *dtype, out)) {
    out.data.reset();
    out.nbytes = 0;
    out.no_data_reason_id = diagnose(recorder, tensor);
  }
  capture.add_array(tensor, std::move(out));
}

/// torch.Size, and torch.return_types structseqs (torch.max(x, 0) → (values, indices)), are
/// tuples to the user: encode them as lists.
bool is_torch_tuple(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == torch_objects.size) return true;
  return PyTuple_Check(object) && std::strncmp(type->tp_name, "torch.return_types.", 19) == 0;
}

/// Storages: their repr lists every element (and TypedStorage's warns that it is deprecated), so
/// they are described from their size, dtype and device instead.
bool capture_storage(ValueCapture& capture, PyObject* object) {
  const bool typed = torch_objects.typed_storage && PyObject_TypeCheck(object, torch_objects.typed_storage);
  if (!typed && !(torch_objects.untyped_storage && PyObject_TypeCheck(object, torch_objects.untyped_storage))) {
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
  for (auto* t : torch_objects.singleton_types) known = known || t == type;
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

bool capture_torch_value(ValueCapture& capture, PyObject* object) {
  if (PyObject_TypeCheck(object, torch_objects.tensor_base)) {
    capture_tensor(capture, object);
    return true;
  }
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

PyObject* get_path(PyObject* root, const char* dotted) {
  PyRef current = PyRef::borrow(root);
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

}  // namespace

bool enable_torch_capture(PyObject* torch) {
  if (torch_objects.tensor_base != nullptr) return true;
  if (!intern_names()) {
    PyErr_Clear();
    return false;
  }
  PyObject* base = get_path(torch, "_C.TensorBase");
  PyObject* size = get_path(torch, "Size");
  PyObject* strided = get_path(torch, "strided");
  PyObject* plain = get_path(torch, "_C._disabled_torch_dispatch_impl");
  if (!base || !size || !strided || !plain || !PyType_Check(base) || !PyType_Check(size)) {
    PyErr_Clear();
    Py_XDECREF(base), Py_XDECREF(size), Py_XDECREF(strided), Py_XDECREF(plain);
    return false;
  }
  torch_objects.tensor_base = reinterpret_cast<PyTypeObject*>(base);
  torch_objects.size = reinterpret_cast<PyTypeObject*>(size);
  torch_objects.strided = strided;
  torch_objects.plain_dispatch = plain;
  for (const char* path : {"dtype", "layout", "memory_format", "qscheme"}) {
    PyObject* type = get_path(torch, path);
    if (type != nullptr && PyType_Check(type)) {
      torch_objects.singleton_types.push_back(reinterpret_cast<PyTypeObject*>(type));
    } else {
      Py_XDECREF(type);
      PyErr_Clear();
    }
  }
  // Storages are optional: without them, their values fall back to the generic description.
  for (auto [path, slot] : {std::pair{"UntypedStorage", &torch_objects.untyped_storage},
                            std::pair{"storage.TypedStorage", &torch_objects.typed_storage}}) {
    PyObject* type = get_path(torch, path);
    if (type != nullptr && PyType_Check(type)) {
      *slot = reinterpret_cast<PyTypeObject*>(type);
    } else {
      Py_XDECREF(type);
      PyErr_Clear();
    }
  }
  register_array_like_capturer(&capture_torch_value);
  return true;
}

}  // namespace ophook::py
