#include "torch/tensors/dense_view.hpp"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "ophook/log.hpp"
#include "torch/libtorch_symbols.hpp"

namespace ophook::py {
namespace {

const DLPackExchangeAPI* exchange_api = nullptr;
// torch's converter called on the tensor in place (libtorch_symbols), once it gave the exporter's
// answers for every probe tensor.
bool native_reads = false;

/// DLPack type → torch dtype. Sub-byte dtypes (int1…int7, uint1…uint7) export as int8/uint8, so
/// a DLPack type some dtypes share maps to nullptr: the caller then reads tensor.dtype.
std::unordered_map<std::uint32_t, const TorchDtype*> dtypes_by_key;

std::uint32_t key_of(DLDataType type) {
  return std::uint32_t{type.code} | std::uint32_t{type.bits} << 8 | std::uint32_t{type.lanes} << 16;
}

/// An empty tensor viewed as `dtype` (a view, not a new tensor: making one would give some dtypes'
/// one-time warnings away), and in `key` the DLPack type torch exports it as; null when torch
/// refuses to export it (quantized, bit types).
PyRef dtype_probe(PyObject* empty_bytes, PyObject* dtype, std::uint32_t& key) {
  static PyObject* view_name = PyUnicode_InternFromString("view");
  PyRef tensor = PyRef::steal(PyObject_CallMethodOneArg(empty_bytes, view_name, dtype));
  DLTensor view{};
  if (!tensor || exchange_api->dltensor_from_py_object_no_sync(tensor.get(), &view) != 0) {
    PyErr_Clear();
    return {};
  }
  key = key_of(view.dtype);
  return tensor;
}

/// Every torch.dtype object the torch module names (torch.float32, torch.half …), once each.
std::vector<PyObject*> torch_dtypes(PyObject* torch) {
  std::vector<PyObject*> out;
  PyRef dtype_type = PyRef::steal(PyObject_GetAttrString(torch, "dtype"));
  PyRef names = PyRef::steal(PyObject_Dir(torch));
  if (!dtype_type || !names || !PyList_Check(names.get())) {
    PyErr_Clear();
    return out;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names.get()); ++i) {
    PyRef value = PyRef::steal(PyObject_GetAttr(torch, PyList_GET_ITEM(names.get(), i)));
    if (!value) {
      PyErr_Clear();
      continue;
    }
    if (Py_TYPE(value.get()) != reinterpret_cast<PyTypeObject*>(dtype_type.get())) continue;
    bool seen = false;
    for (auto* d : out) seen = seen || d == value.get();
    if (!seen) out.push_back(value.get());  // dtypes are immortal singletons: borrowed is fine
  }
  return out;
}

bool find_exchange_api(PyObject* torch) {
  PyRef c = PyRef::steal(PyObject_GetAttrString(torch, "_C"));
  PyRef getter = c ? PyRef::steal(PyObject_GetAttrString(c.get(), "_dlpack_exchange_api")) : PyRef();
  PyRef capsule = getter ? PyRef::steal(PyObject_CallNoArgs(getter.get())) : PyRef();
  const auto* api = capsule ? static_cast<const DLPackExchangeAPI*>(PyCapsule_GetPointer(capsule.get(), "dlpack_exchange_api"))
                            : nullptr;
  PyErr_Clear();
  // The struct torch fills is the one this header declares only for the same major version;
  // torch documents the API object as living for the whole process.
  if (api == nullptr || api->header.version.major != DLPACK_MAJOR_VERSION ||
      api->dltensor_from_py_object_no_sync == nullptr) {
    return false;
  }
  exchange_api = api;
  return true;
}

bool same_view(const DLTensor& a, const DLTensor& b) {
  const auto n = static_cast<std::size_t>(a.ndim);
  return a.data == b.data && a.byte_offset == b.byte_offset && a.ndim == b.ndim &&
         a.device.device_type == b.device.device_type && a.device.device_id == b.device.device_id &&
         key_of(a.dtype) == key_of(b.dtype) && std::equal(a.shape, a.shape + n, b.shape) &&
         (a.strides == nullptr) == (b.strides == nullptr) &&
         (a.strides == nullptr || std::equal(a.strides, a.strides + n, b.strides));
}

/// Whether libtorch_symbols's converter describes `tensor` exactly as the exporter does.
bool native_read_agrees(PyObject* tensor) {
  DLTensor exported{}, native{};
  if (exchange_api->dltensor_from_py_object_no_sync(tensor, &exported) != 0) {
    PyErr_Clear();
    return false;
  }
  return libtorch_symbols::describe_tensor(tensor, native) && same_view(exported, native);
}

/// Probes for the converter beyond the dtype views: a transposed slice (strides, an offset) and a
/// 3-d tensor.
std::vector<PyRef> strided_probes(PyObject* empty_bytes) {
  std::vector<PyRef> out;
  PyRef grid = PyRef::steal(PyObject_CallMethod(empty_bytes, "new_empty", "((iii))", 2, 3, 4));
  PyRef one = PyRef::steal(PyLong_FromLong(1));
  PyRef slice = one ? PyRef::steal(PySlice_New(one.get(), nullptr, nullptr)) : PyRef();
  PyRef turned = grid ? PyRef::steal(PyObject_CallMethod(grid.get(), "transpose", "ii", 0, 2)) : PyRef();
  PyRef cut = turned && slice ? PyRef::steal(PyObject_GetItem(turned.get(), slice.get())) : PyRef();
  if (!grid || !cut) {
    PyErr_Clear();
    return out;
  }
  out.push_back(std::move(grid));
  out.push_back(std::move(cut));
  return out;
}

}  // namespace

bool enable_dense_views(core::Recorder& recorder, PyObject* torch) {
  if (exchange_api != nullptr) return true;
  if (!find_exchange_api(torch)) return false;
  PyRef empty = PyRef::steal(PyObject_GetAttrString(torch, "empty"));
  PyRef uint8 = PyRef::steal(PyObject_GetAttrString(torch, "uint8"));
  PyRef kwargs = uint8 ? PyRef::steal(Py_BuildValue("{s:O}", "dtype", uint8.get())) : PyRef();
  PyRef size = PyRef::steal(Py_BuildValue("(i)", 0));
  PyRef empty_bytes = empty && kwargs && size ? PyRef::steal(PyObject_Call(empty.get(), size.get(), kwargs.get())) : PyRef();
  if (!empty_bytes) {
    PyErr_Clear();
    exchange_api = nullptr;
    return false;
  }
  libtorch_symbols::find(torch);
  bool native_agrees = libtorch_symbols::has_tensor_converter();
  for (PyObject* dtype : torch_dtypes(torch)) {
    std::uint32_t key = 0;
    PyRef dtype_view = dtype_probe(empty_bytes.get(), dtype, key);
    if (!dtype_view) continue;
    const TorchDtype* described = torch_dtype(recorder, dtype);
    auto [it, fresh] = dtypes_by_key.emplace(key, described);
    if (!fresh && it->second != described) it->second = nullptr;  // shared: ask the tensor
    native_agrees = native_agrees && native_read_agrees(dtype_view.get());
  }
  for (const auto& probe : strided_probes(empty_bytes.get())) {
    native_agrees = native_agrees && native_read_agrees(probe.get());
  }
  native_reads = native_agrees;
  core::log_debug("torch tensors read through {}",
                       native_reads ? "at::toDLPackNonOwning" : "torch's DLPack exporter");
  return true;
}

bool read_any_device_view(PyObject* tensor, DLTensor& out) {
  if (exchange_api == nullptr) return false;
  if (native_reads) return libtorch_symbols::describe_tensor(tensor, out);
  if (exchange_api->dltensor_from_py_object_no_sync(tensor, &out) == 0) return true;
  PyErr_Clear();
  return false;
}

bool current_work_stream(int device_type, int device_id, void*& stream) {
  stream = nullptr;
  return exchange_api != nullptr && exchange_api->current_work_stream != nullptr &&
         exchange_api->current_work_stream(static_cast<DLDeviceType>(device_type), device_id, &stream) == 0;
}

bool read_dense_view(PyObject* tensor, DenseTensorView& out) {
  DLTensor view;
  if (!read_any_device_view(tensor, view)) return false;
  // DLPack allows null strides for C-contiguous data; torch always fills them, but a null would
  // leave nothing to copy with.
  if (view.device.device_type != kDLCPU || view.strides == nullptr || !dtype_of(view.dtype, out.dtype)) return false;
  out.data = static_cast<const std::byte*>(view.data) + view.byte_offset;
  out.shape = view.shape;
  out.strides = view.strides;
  out.ndim = static_cast<std::size_t>(view.ndim);
  return true;
}

bool dtype_of(DLDataType type, const TorchDtype*& dtype) {
  // Most calls repeat the dtype of the tensor before: one compare instead of a hash lookup
  // (the GIL is held, so the two statics are never written concurrently).
  static std::uint32_t last_key = ~0u;
  static const TorchDtype* last_dtype = nullptr;
  if (const auto key = key_of(type); key != last_key) {
    const auto known = dtypes_by_key.find(key);
    if (known == dtypes_by_key.end()) return false;
    last_key = key, last_dtype = known->second;
  }
  dtype = last_dtype;
  return true;
}

}  // namespace ophook::py
