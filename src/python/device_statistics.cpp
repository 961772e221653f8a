#include "device_statistics.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "call_recording.hpp"
#include "ophook/stats.hpp"
#include "ophook/strided_copy.hpp"
#include "thread_state.hpp"
#include "torch_device_path.hpp"

namespace ophook::py::device_statistics {
namespace {

using Clock = std::chrono::steady_clock;
// Held records are read back together once there are this many, or once the oldest has waited
// this long (checked when another record is held): the device is synchronised once per batch,
// and trace.jsonl still gets the lines soon after the calls.
constexpr std::size_t kHeldRecords = 64;
constexpr auto kHeldFor = std::chrono::milliseconds(100);

/// An array waiting for the statistics queued on its tensor's device.
struct Expected {
  core::CallRecord* record;
  std::uint32_t index;
  std::size_t nbytes;
  PyObject* pending;  // owned: what _torch_device.statistics returned
};

std::vector<Expected> expected;     // of records being built or held
std::vector<core::RecordPtr> held;  // finished records, in the order they finished
Clock::time_point held_since;

// A forked child's copies belong to the parent, which submits them: the child forgets them,
// leaked, since their tensors live on a device the child must not touch.
const bool fork_handler_registered = [] {
  pthread_atfork(nullptr, nullptr, [] {
    for (auto& record : held) (void)record.release();
    held.clear();
    expected.clear();
  });
  return true;
}();

/// Moves the entries whose record `belongs` out of `expected`, in order.
template <typename Belongs>
std::vector<Expected> take_expected(Belongs&& belongs) {
  std::vector<Expected> taken, kept;
  for (const auto& entry : expected) (belongs(entry.record) ? taken : kept).push_back(entry);
  expected.swap(kept);
  return taken;
}

/// The statistics of one array from the host values `result` (see _torch_device.resolve).
void fill(const Expected& entry, PyObject* result) {
  auto& array = entry.record->arrays[entry.index];
  Unread unread{"its statistics could not be read back from the device: spec only", "", false};
  if (result == nullptr || as_unread(result, unread) || !PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 8) {
    return report_unread(*entry.record, array, unread);
  }
  auto integer = [&](Py_ssize_t i) { return PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(result, i)); };
  auto real = [&](Py_ssize_t i) { return PyFloat_AsDouble(PyTuple_GET_ITEM(result, i)); };
  core::ArrayStats stats;
  stats.numeric = true;
  stats.nan = integer(0);
  const std::uint64_t finite = integer(1);
  stats.inf = core::element_count(array.shape) - stats.nan - finite;
  stats.has_finite = finite > 0;
  stats.min = real(2), stats.max = real(3), stats.mean = real(4);
  // As the writer computes it from the bytes: the root of the mean squared deviation.
  stats.std = stats.has_finite ? std::sqrt(real(5) / static_cast<double>(finite)) : 0.0;
  stats.xxh64 = core::device_fingerprint_digest(integer(6), integer(7), entry.nbytes);
  if (PyErr_Occurred()) {
    unread.detail = take_python_error();
    return report_unread(*entry.record, array, unread);
  }
  array.given_stats = stats;
  if (auto* recorder = core::Recorder::get()) recorder->count_tensor_copied_by_torch();
}

/// Reads back the statistics of `batch` (taken out of `expected`) into their records: one copy
/// to the host per device. May release the GIL.
void read_back(std::vector<Expected>& batch) {
  if (batch.empty()) return;
  BusyScope busy;
  PyRef list = PyRef::steal(PyList_New(static_cast<Py_ssize_t>(batch.size())));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (list) {
      PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), batch[i].pending);  // the list owns it now
    } else {
      Py_DECREF(batch[i].pending);
    }
    batch[i].pending = nullptr;
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

}  // namespace

void expect(core::CallRecord& record, std::uint32_t index, PyRef pending, std::size_t nbytes) {
  PyObject* owned = pending.get();
  Py_INCREF(owned);
  expected.push_back({&record, index, nbytes, owned});
}

bool awaited(const core::CallRecord& record) noexcept {
  return std::any_of(expected.begin(), expected.end(), [&](const Expected& e) { return e.record == &record; });
}

void resolve(core::CallRecord& record) {
  if (!awaited(record)) return;
  auto batch = take_expected([&](const core::CallRecord* r) { return r == &record; });
  read_back(batch);
}

void defer(core::Recorder& recorder, core::RecordPtr record) {
  if (recorder.config().mode == core::Mode::Trace) {
    // Trace mode queued counts for OPHOOK_NAN's check alone; a call that raised has none.
    for (auto& entry : take_expected([&](const core::CallRecord* r) { return r == record.get(); })) {
      Py_DECREF(entry.pending);
    }
    return submit_record(recorder, std::move(record));
  }
  if (held.empty()) held_since = Clock::now();
  held.push_back(std::move(record));
  recorder.set_held_records(held.size());
  if (held.size() >= kHeldRecords || Clock::now() - held_since >= kHeldFor) resolve_held();
}

void resolve_held() {
  if (held.empty()) return;
  auto records = std::move(held);
  held.clear();
  auto batch = take_expected([&](const core::CallRecord* r) {
    return std::any_of(records.begin(), records.end(), [&](const core::RecordPtr& h) { return h.get() == r; });
  });
  read_back(batch);  // other threads may hold records meanwhile: they stay in `held`
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return;
  recorder->set_held_records(held.size());
  for (auto& record : records) submit_record(*recorder, std::move(record));
}

}  // namespace ophook::py::device_statistics
