#include "numpy_arrays.hpp"

#include <memory>
#include <string>
#include <unordered_map>

#include "ophook/strided_copy.hpp"
#include "value_capture.hpp"

namespace ophook::py {
namespace {

struct DtypeEntry {
  std::uint32_t dtype_id = 0;
  bool savable = false;
  std::uint32_t reason_id = 0;
};

/// Interned description of a dtype, cached per descriptor object: builtin dtypes are singletons,
/// so the cache holds a handful of entries and the lookup is one hash probe per array.
const DtypeEntry& dtype_entry(core::Recorder& recorder, PyArray_Descr* descr) {
  static std::unordered_map<PyArray_Descr*, DtypeEntry> cache;
  constexpr std::size_t kMaxCached = 4096;
  if (auto it = cache.find(descr); it != cache.end()) return it->second;

  auto* as_object = reinterpret_cast<PyObject*>(descr);
  // str(dtype): "float32", "bool", "<U5", "|S3", ">i4", "datetime64[D]" — numpy's own spelling.
  const auto name = str_or(as_object, "?");
  const auto npy_str = attribute_str_or(as_object, "str", "?");
  DtypeEntry entry;
  PyRef fields = PyRef::steal(PyObject_GetAttrString(as_object, "fields"));
  PyErr_Clear();
  const bool structured = fields && fields.get() != Py_None;
  const char kind = npy_str.size() > 1 ? npy_str[1] : '?';
  if (PyDataType_REFCHK(descr) || kind == 'O') {
    entry.reason_id = recorder.intern("object dtype: no file without pickle");
  } else if (structured || kind == 'V') {
    entry.reason_id = recorder.intern("structured or void dtype: statistics and file not supported");
  } else {
    entry.savable = true;
  }
  entry.dtype_id = recorder.intern_dtype({name, entry.savable ? npy_str : "", ""});
  static DtypeEntry uncached;
  if (cache.size() >= kMaxCached) return uncached = entry;
  Py_INCREF(as_object);  // keeps the key alive, so the pointer is never reused for another dtype
  return cache.emplace(descr, entry).first->second;
}

void capture_array(ValueCapture& capture, PyObject* object, PyArrayObject* array) {
  if (auto alias = capture.alias_of(object); alias >= 0) {
    core::ArrayCapture copy;
    const auto& first = capture.record().arrays[static_cast<std::size_t>(alias)];
    copy.shape = first.shape;
    copy.dtype_id = first.dtype_id;
    copy.alias_of = alias;
    capture.add_array(object, std::move(copy));
    return;
  }
  const int nd = PyArray_NDIM(array);
  const npy_intp* dims = PyArray_DIMS(array);
  const auto& dtype = dtype_entry(capture.recorder(), PyArray_DESCR(array));
  core::ArrayCapture out;
  out.shape.assign(dims, dims + nd);
  out.dtype_id = dtype.dtype_id;
  out.no_data_reason_id = dtype.reason_id;
  if (capture.copy_data() && dtype.savable) {
    const auto item = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
    const auto n = static_cast<std::size_t>(PyArray_SIZE(array)) * item;
    out.data = std::make_unique_for_overwrite<std::byte[]>(n);
    out.nbytes = n;
    const npy_intp* strides = PyArray_STRIDES(array);
    static_assert(sizeof(npy_intp) == sizeof(std::int64_t));
    core::strided_copy(out.data.get(), static_cast<const std::byte*>(PyArray_DATA(array)),
                       {reinterpret_cast<const std::int64_t*>(dims), static_cast<std::size_t>(nd)},
                       {reinterpret_cast<const std::int64_t*>(strides), static_cast<std::size_t>(nd)}, item);
    out.captured = true;
  }
  capture.add_array(object, std::move(out));
}

}  // namespace

bool capture_numpy_value(ValueCapture& capture, PyObject* object) {
  if (PyArray_Check(object)) {
    capture_array(capture, object, reinterpret_cast<PyArrayObject*>(object));
    return true;
  }
  if (PyArray_IsScalar(object, Generic)) {
    // A NumPy scalar (what a.sum() returns) is saved as the 0-d array it stands for.
    PyRef zero_d = PyRef::steal(PyArray_FromScalar(object, nullptr));
    if (!zero_d) {
      PyErr_Clear();
      return false;
    }
    capture_array(capture, object, reinterpret_cast<PyArrayObject*>(zero_d.get()));
    return true;
  }
  return false;
}

}  // namespace ophook::py
