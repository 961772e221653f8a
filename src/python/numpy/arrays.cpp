#include "numpy/arrays.hpp"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "ophook/capture/copy_memo.hpp"
#include "ophook/capture/strided_copy.hpp"
#include "recording/capture_budget.hpp"
#include "recording/value_capture.hpp"

namespace ophook::py {
namespace {

struct DtypeEntry {
  std::uint32_t dtype_id = 0;
  bool savable = false;
  std::uint32_t reason_id = 0;
};

/// Interned description of a dtype, cached per descriptor object: builtin dtypes are singletons,
/// so the cache holds a handful of entries. The last descriptor seen is checked first: most calls
/// see one dtype over and over.
const DtypeEntry& dtype_entry(core::Recorder& recorder, PyArray_Descr* descr) {
  static std::unordered_map<PyArray_Descr*, DtypeEntry> cache;
  static PyArray_Descr* last_descr = nullptr;
  static const DtypeEntry* last_entry = nullptr;
  constexpr std::size_t kMaxCached = 4096;
  if (descr == last_descr) return *last_entry;
  if (auto it = cache.find(descr); it != cache.end()) {
    last_descr = descr, last_entry = &it->second;
    return it->second;
  }

  auto* as_object = reinterpret_cast<PyObject*>(descr);
  // str(dtype): "float32", "bool", "<U5", "|S3", ">i4", "datetime64[D]" — numpy's own spelling.
  const auto name = str_or(as_object, "?");
  const auto npy_str = attribute_str_or(as_object, "str", "?");
  DtypeEntry entry;
  PyRef fields = PyRef::steal(PyObject_GetAttrString(as_object, "fields"));
  PyErr_Clear();
  const bool structured = fields && fields.get() != Py_None;
  const char kind = npy_str.size() > 1 ? npy_str[1] : '?';
  // A structured dtype is saved as numpy.save does: the header's descr is str(dtype.descr), the
  // Python literal of its field list, which numpy.load reads back without pickle.
  const auto file_descr = structured ? attribute_str_or(as_object, "descr", "") : npy_str;
  constexpr std::size_t kMaxDescr = 9000;  // numpy.load refuses header dicts over 10000 bytes
  if (PyDataType_REFCHK(descr) || kind == 'O') {
    entry.reason_id = recorder.intern("object dtype: no file without pickle");
  } else if (structured && (file_descr.empty() || file_descr.size() > kMaxDescr)) {
    entry.reason_id = recorder.intern("structured dtype too large for a .npy header numpy.load accepts");
  } else {
    entry.savable = true;
  }
  entry.dtype_id = recorder.intern_dtype({name, entry.savable ? file_descr : "", ""});
  static DtypeEntry uncached;
  if (cache.size() >= kMaxCached) return uncached = entry;
  Py_INCREF(as_object);  // keeps the key alive, so the pointer is never reused for another dtype
  const auto& kept = cache.emplace(descr, entry).first->second;  // node-based: the address stays
  last_descr = descr, last_entry = &kept;
  return kept;
}

/// The array's layout, for replay, when its byte strides are whole elements (those of a field
/// of a structured array need not be).
void note_layout(core::ArrayCapture& out, const npy_intp* byte_strides, int nd, npy_intp item) {
  thread_local std::vector<std::int64_t> elements;  // reused: no allocation per array
  elements.clear();
  for (int i = 0; i < nd; ++i) {
    if (item <= 0 || byte_strides[i] % item != 0) return;
    elements.push_back(byte_strides[i] / item);
  }
  out.set_strides(elements);
}

/// How many elements lie in the one block of memory, starting at the array's data pointer, that
/// holds all its values (in any order of its dimensions, repeated along broadcast ones); nullopt
/// when there is no such block. OPHOOK_NAN reads such an array in place.
std::optional<std::size_t> one_block(PyArrayObject* array) {
  const int nd = PyArray_NDIM(array);
  if (PyArray_IS_C_CONTIGUOUS(array) || PyArray_IS_F_CONTIGUOUS(array)) return static_cast<std::size_t>(PyArray_SIZE(array));
  const npy_intp item = PyArray_ITEMSIZE(array);
  const npy_intp* byte_strides = PyArray_STRIDES(array);
  thread_local std::vector<std::int64_t> elements;  // reused: no allocation per array
  elements.clear();
  for (int i = 0; i < nd; ++i) {
    if (item <= 0 || byte_strides[i] % item != 0) return std::nullopt;
    elements.push_back(byte_strides[i] / item);
  }
  static_assert(sizeof(npy_intp) == sizeof(std::int64_t));
  return core::one_block_elements({reinterpret_cast<const std::int64_t*>(PyArray_DIMS(array)), static_cast<std::size_t>(nd)},
                                  elements);
}

/// Inputs of one call sharing memory (np.matmul(x.T, x), which NumPy computes with BLAS syrk
/// where two arrays would take gemm): an input lying inside an earlier input's block of memory is
/// noted as a view into it, and an input in C or Fortran order is noted as a block for the inputs
/// after it. Only where arrays are copied: replay needs their files.
void note_shared_memory(ValueCapture& capture, PyArrayObject* array, core::ArrayCapture& out, std::uint32_t index) {
  const npy_intp item = PyArray_ITEMSIZE(array);
  const npy_intp size = PyArray_SIZE(array);
  if (size == 0 || item <= 0) return;
  const auto* data = static_cast<const std::byte*>(PyArray_DATA(array));
  const npy_intp* dims = PyArray_DIMS(array);
  const npy_intp* strides = PyArray_STRIDES(array);
  npy_intp low = 0, high = 0;  // the first and last elements' offsets from element 0, in bytes
  for (int d = 0; d < PyArray_NDIM(array); ++d) {
    if (strides[d] % item != 0) return;
    (strides[d] < 0 ? low : high) += (dims[d] - 1) * strides[d];
  }
  if (const auto* block = capture.block_holding(data + low, data + high + item, out.dtype_id)) {
    const auto offset = data - block->first;
    if (offset % item != 0) return;
    out.view_of = static_cast<std::int32_t>(block->index);
    out.view_offset = offset / item;
    capture.record().arrays[block->index].viewed = true;
    return;
  }
  if (PyArray_IS_C_CONTIGUOUS(array) || PyArray_IS_F_CONTIGUOUS(array)) {
    capture.note_block(index, data, static_cast<std::size_t>(size * item), out.dtype_id);
  }
}

void capture_array(ValueCapture& capture, PyObject* object, PyArrayObject* array, core::ArrayType type) {
  if (auto alias = capture.alias_of(object); alias >= 0) {
    auto& copy = capture.new_array(object);
    const auto& first = capture.record().arrays[static_cast<std::size_t>(alias)];
    copy.shape = first.shape;
    copy.strides = first.strides;
    copy.python_type = type;
    copy.dtype_id = first.dtype_id;
    copy.alias_of = alias;
    return;
  }
  const int nd = PyArray_NDIM(array);
  const npy_intp* dims = PyArray_DIMS(array);
  const auto& dtype = dtype_entry(capture.recorder(), PyArray_DESCR(array));
  const bool summarised = capture.stats_in_place() && dtype.savable && PyArray_IS_C_CONTIGUOUS(array);
  const auto block = capture.checks_in_place() ? one_block(array) : std::nullopt;
  const bool copy = !summarised && capture.copies(block.has_value()) && dtype.savable;
  const bool live = !copy && block && dtype.savable;
  const auto item = static_cast<std::size_t>(PyArray_ITEMSIZE(array));
  // The byte count only when copying: PyArray_SIZE is a call per array, in trace mode for nothing.
  const auto n = copy ? static_cast<std::size_t>(PyArray_SIZE(array)) * item : 0;
  // Refused beyond OPHOOK_QUEUE_BYTES; else copied once the writer has room (capture_budget.hpp).
  auto budget = copy ? reserve_copy(capture, n) : CopyBudget{false, dtype.reason_id, {}};
  const auto index = static_cast<std::uint32_t>(capture.record().arrays.size());
  auto& out = capture.new_array(object);
  out.shape.assign(dims, dims + nd);
  if (!PyArray_IS_C_CONTIGUOUS(array)) note_layout(out, PyArray_STRIDES(array), nd, PyArray_ITEMSIZE(array));
  out.dtype_id = dtype.dtype_id;
  out.python_type = type;
  out.no_data_reason_id = budget.reason_id;
  if (budget.copy && !capture.in_outputs()) note_shared_memory(capture, array, out, index);
  if (live) {
    out.live = static_cast<const std::byte*>(PyArray_DATA(array));
    out.live_nbytes = *block * item;
  }
  if (summarised) {
    capture.stats_in_place_of(out, static_cast<const std::byte*>(PyArray_DATA(array)),
                               static_cast<std::size_t>(PyArray_SIZE(array)) * item);
  }
  if (budget.copy && PyArray_IS_C_CONTIGUOUS(array)) {
    const auto* data = static_cast<const std::byte*>(PyArray_DATA(array));
    core::copy_or_share(out, data, data, n, std::move(budget.spare));
  } else if (budget.copy) {
    const npy_intp* strides = PyArray_STRIDES(array);
    static_assert(sizeof(npy_intp) == sizeof(std::int64_t));
    core::strided_copy(out.reserve_data(n, std::move(budget.spare)), static_cast<const std::byte*>(PyArray_DATA(array)),
                       {reinterpret_cast<const std::int64_t*>(dims), static_cast<std::size_t>(nd)},
                       {reinterpret_cast<const std::int64_t*>(strides), static_cast<std::size_t>(nd)}, item);
    out.captured = true;
  }
}

}  // namespace

bool capture_numpy_value(ValueCapture& capture, PyObject* object) {
  if (PyArray_Check(object)) {
    capture_array(capture, object, reinterpret_cast<PyArrayObject*>(object), core::ArrayType::NumpyArray);
    return true;
  }
  if (PyArray_IsScalar(object, Generic)) {
    // A NumPy scalar (what a.sum() returns) is saved as the 0-d array it stands for.
    PyRef zero_d = PyRef::steal(PyArray_FromScalar(object, nullptr));
    if (!zero_d) {
      PyErr_Clear();
      return false;
    }
    capture_array(capture, object, reinterpret_cast<PyArrayObject*>(zero_d.get()), core::ArrayType::NumpyScalar);
    return true;
  }
  // A buffer exporter of typed elements (memoryview, array.array, the typed memoryviews Cython
  // code such as scikit-learn hands to NumPy) is the array NumPy makes of it, a view of the same
  // memory: its values are the call's, to record and to check (a NaN it holds is not the call's
  // making). Buffers of bytes stay values: `bytes` NumPy takes for a string, and a bytearray or an
  // mmap is raw bytes, often a whole file that np.frombuffer reads a slice of.
  if (PyObject_CheckBuffer(object) && !PyBytes_Check(object)) {
    PyRef view = PyRef::steal(PyArray_FromAny(object, nullptr, 0, 0, 0, nullptr));
    if (!view || !PyArray_Check(view.get())) {
      PyErr_Clear();
      return false;
    }
    const int type = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(view.get()));
    if (type == NPY_UBYTE || type == NPY_BYTE) return false;
    capture_array(capture, object, reinterpret_cast<PyArrayObject*>(view.get()), core::ArrayType::Buffer);
    return true;
  }
  return false;
}

}  // namespace ophook::py
