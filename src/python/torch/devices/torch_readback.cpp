#include "torch/devices/torch_readback.hpp"

#include <cmath>
#include <cstring>

#include "ophook/process/recorder.hpp"
#include "ophook/stats/stats.hpp"
#include "thread_state.hpp"
#include "torch/tensors/dense_view.hpp"
#include "torch/torch_device_module.hpp"

namespace ophook::py::device_readback {
namespace {

/// The bytes of `host`, a uint8 CPU tensor of `nbytes` elements that resolve() made: through the
/// dense view, else (torch without the DLPack exporter) through data_ptr(); null when it is not.
const std::byte* host_bytes(PyObject* host, std::size_t nbytes) {
  DenseTensorView view;
  if (read_dense_view(host, view)) {
    return view.ndim == 1 && static_cast<std::size_t>(view.shape[0]) == nbytes ? view.data : nullptr;
  }
  PyRef numel = PyRef::steal(PyObject_CallMethod(host, "numel", nullptr));
  PyRef pointer = numel ? PyRef::steal(PyObject_CallMethod(host, "data_ptr", nullptr)) : PyRef();
  const auto address = pointer && PyLong_AsSize_t(numel.get()) == nbytes ? PyLong_AsUnsignedLongLong(pointer.get()) : 0;
  if (PyErr_Occurred() || address == 0) {
    PyErr_Clear();
    return nullptr;
  }
  // data_ptr() hands the address over as a Python int: there is no pointer to derive it from.
  return reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(address));  // NOLINT(performance-no-int-to-ptr)
}

/// A snapshot's bytes, from the host tensor `result`, into the array's reserved buffer.
bool fill_bytes(const Expected& entry, PyObject* result, core::ArrayCapture& array) {
  const auto& r = entry.readback;
  const std::byte* bytes = host_bytes(result, r.nbytes);
  if (bytes == nullptr || !array.data) return false;
  if (r.widen != nullptr) {
    r.widen(array.data.get(), bytes, r.count);
  } else {
    std::memcpy(array.data.get(), bytes, r.nbytes);
  }
  array.captured = true;
  return true;
}

/// Statistics, or the NaN and finite counts alone (OPHOOK_NAN's check in trace mode), from the
/// host values `result` (see _torch.device.resolve).
bool fill_statistics(const Expected& entry, PyObject* result, core::ArrayCapture& array) {
  const Py_ssize_t size = PyTuple_Check(result) ? PyTuple_GET_SIZE(result) : 0;
  if (size != 8 && size != 2) return false;
  auto integer = [&](Py_ssize_t i) { return PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(result, i)); };
  auto real = [&](Py_ssize_t i) { return PyFloat_AsDouble(PyTuple_GET_ITEM(result, i)); };
  core::ArrayStats stats;
  stats.numeric = true;
  stats.nan = integer(0);
  const std::uint64_t finite = integer(1);
  stats.inf = entry.readback.count - stats.nan - finite;
  if (size == 8) {
    stats.has_finite = finite > 0;
    stats.min = real(2), stats.max = real(3), stats.mean = real(4);
    // As the writer computes it from the bytes: the root of the mean squared deviation.
    stats.std = stats.has_finite ? std::sqrt(real(5) / static_cast<double>(finite)) : 0.0;
    stats.xxh64 = core::device_fingerprint_digest(integer(6), integer(7), entry.readback.nbytes);
  }
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  array.given_stats = stats;
  return true;
}

/// The read-back `result` of `entry` (null: none) into its array.
void fill(const Expected& entry, PyObject* result) {
  auto& array = entry.record->arrays[entry.index];
  Unread unread{"reading it back from the device failed: spec only", "", false};
  const bool filled = result != nullptr && !as_unread(result, unread) &&
                      (entry.readback.bytes ? fill_bytes(entry, result, array) : fill_statistics(entry, result, array));
  if (!filled) return report_unread(*entry.record, array, unread);
  if (auto* recorder = core::Recorder::get()) recorder->counters().count_tensor_copied_by_torch();
}

/// Keeps the exception being raised, if any, across ophook's own Python calls: a record is
/// submitted, and held records may be read back, while the op's exception is on its way.
class KeptException {
 public:
  KeptException() { PyErr_Fetch(&type_, &value_, &traceback_); }
  ~KeptException() { PyErr_Restore(type_, value_, traceback_); }
  KeptException(const KeptException&) = delete;
  KeptException& operator=(const KeptException&) = delete;

 private:
  PyObject *type_, *value_, *traceback_;
};

}  // namespace

void read_back_through_torch(std::vector<Expected>& batch) {
  if (batch.empty()) return;
  BusyScope busy;
  KeptException kept;
  PyRef list = PyRef::steal(PyList_New(static_cast<Py_ssize_t>(batch.size())));
  for (std::size_t i = 0; list && i < batch.size(); ++i) {
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), batch[i].readback.pending.release());  // the list owns it
  }
  PyRef results = list && resolve_function() ? PyRef::steal(PyObject_CallOneArg(resolve_function(), list.get()))
                                             : PyRef();
  const bool complete = results && PyList_Check(results.get()) &&
                        PyList_GET_SIZE(results.get()) == static_cast<Py_ssize_t>(batch.size());
  if (!results) take_python_error();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    fill(batch[i], complete ? PyList_GET_ITEM(results.get(), static_cast<Py_ssize_t>(i)) : nullptr);
  }
}


}  // namespace ophook::py::device_readback
