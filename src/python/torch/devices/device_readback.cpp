#include "torch/devices/device_readback.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/engine/device_engines.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/capture/strided_copy.hpp"
#include "ophook/log.hpp"
#include "ophook/process/fork_handlers.hpp"
#include "ophook/stats/stats.hpp"
#include "program_pause.hpp"
#include "recording/call_recording.hpp"
#include "recording/device_reads.hpp"
#include "thread_state.hpp"
#include "torch/devices/device_path.hpp"
#include "torch/devices/device_statistics.hpp"
#include "torch/tensors/dense_view.hpp"

namespace ophook::py::device_readback {
namespace {

using Clock = std::chrono::steady_clock;
// Held records are read back together once there are this many, once the oldest has waited this
// long (checked when another record is held), or once their snapshots hold this much device
// memory: the device is synchronised once per batch, trace.jsonl still gets the lines soon after
// the calls, and the copies stay small.
constexpr std::size_t kHeldRecords = 64;
constexpr auto kHeldFor = std::chrono::milliseconds(100);
constexpr std::size_t kHeldSnapshotBytes = std::size_t{16} << 20;
// Records waiting for the statistics kernel alone complete as its results arrive; this many are
// held at most (a GPU far behind the program), then the oldest are waited for.
constexpr std::size_t kHeldKernelRecords = 1024;

/// Why a tensor that shared the ring's copy of an earlier read has no bytes (note_ring_share_changed).
constexpr const char* kRingShareChanged =
    "changed on its device, by no recorded call, since the read whose copy in the OPHOOK_RING_BYTES ring it shares: "
    "no bytes kept";

/// An array waiting for its read-back.
struct Expected {
  core::CallRecord* record;
  std::uint32_t index;
  Readback readback;
};

// Never destroyed: they may hold Python references, which must not be released once Python has
// finalised (at exit, records still held are counted as dropped by the recorder).
// By record (being built or held; no empty list), each record's in the order they were captured:
// a GPU far behind the program leaves a thousand records held, and a list of all their arrays
// scanned per record made the host's time per call grow with them.
auto& expected = *new std::unordered_map<const core::CallRecord*, std::vector<Expected>>;
auto& held = *new std::deque<core::RecordPtr>;  // finished records, in the order they finished
Clock::time_point held_since;
std::size_t snapshot_bytes = 0;  // of the entries in `expected`
std::size_t generic_entries = 0;  // entries of `expected` the generic path (Python) reads back

/// OPHOOK_NAN's check of a held record, done when its kernel results arrive (check_later).
struct HeldCheck {
  std::size_t first_output;
  std::optional<bool> inputs_nonfinite_before;
  bool check_only;  // a call no level records: written, with a seq, only if it is the culprit
};
auto& held_checks = *new std::unordered_map<const core::CallRecord*, HeldCheck>;

/// `dump`'s bytes the program's thread copied out of the staging memory (arrays under
/// core::kSharedCopyMinBytes, and those widened for their files): the others are lent to records.
std::uint64_t bytes_copied_from_staging = 0;

// A forked child's copies belong to the parent, which submits them: the child forgets them,
// leaked, since their tensors live on a device the child must not touch.
const bool fork_handler_registered = [] {
  core::set_fork_handler(core::ForkStage::HeldReadbacks, {nullptr, nullptr, []() noexcept {
    for (auto& record : held) (void)record.release();
    for (auto& [record, entries] : expected) {
      for (auto& entry : entries) (void)entry.readback.pending.release();
    }
    held.clear();
    expected.clear();
    snapshot_bytes = 0;
    generic_entries = 0;
    held_checks.clear();
  }});
  core::set_fork_handler(core::ForkStage::DeviceEngines, {nullptr, nullptr, &device::forget_engines});
  return true;
}();

void account(const Expected& entry) {
  if (entry.readback.bytes) snapshot_bytes += entry.readback.nbytes;
  if (entry.readback.pending) ++generic_entries;
}

void unaccount(const Expected& entry) {
  if (entry.readback.bytes) snapshot_bytes -= entry.readback.nbytes;
  if (entry.readback.pending) --generic_entries;
}

/// Moves `record`'s entries out of `expected`, in order.
std::vector<Expected> take_expected(const core::CallRecord& record) {
  const auto it = expected.find(&record);
  if (it == expected.end()) return {};
  std::vector<Expected> taken = std::move(it->second);
  expected.erase(it);
  for (const auto& entry : taken) unaccount(entry);
  return taken;
}

/// `record`'s entries, still in `expected` (none: an empty list).
const std::vector<Expected>& entries_of(const core::CallRecord& record) {
  static const std::vector<Expected> none;
  const auto it = expected.find(&record);
  return it == expected.end() ? none : it->second;
}

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
/// host values `result` (see _torch_device.resolve).
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

/// Statistics (in `trace` mode the NaN and Inf counts alone) from the kernel's result.
void fill_from_kernel(const Expected& entry, const device::statistics_kernel::Result& result, core::ArrayCapture& array) {
  core::ArrayStats stats;
  stats.numeric = true;
  stats.nan = result.nan;
  stats.inf = result.nonfinite - result.nan;
  const auto* recorder = core::Recorder::get();
  if (recorder == nullptr || recorder->config().mode != core::Mode::Trace) {
    stats.has_finite = result.finite > 0;
    if (stats.has_finite) {
      stats.min = result.min, stats.max = result.max;
      stats.mean = std::clamp(result.mean, result.min, result.max);  // as the writer keeps it
      stats.std = std::sqrt(result.m2 / static_cast<double>(result.finite));
    }
    stats.xxh64 = core::device_fingerprint_digest(result.position, result.by_value, entry.readback.nbytes);
  }
  array.given_stats = stats;
}

/// Takes the kernel's result for `entry` (ready or waited for) into its array: in `dump` the
/// bytes it copied — lent where the device staged them (core::share_staged_copy; where the file's
/// dtype is wider, by a copy the writer widens), copied (and widened) when small; or, where the
/// device found them unchanged and sent nothing, the copy it compared them with — from which the
/// writer computes the statistics as for any array; and the kernel's statistics, which with bytes
/// only OPHOOK_NAN's check reads (so only when it checks).
/// A tensor that shared the ring's copy of the read before it at its place (the call before's
/// output) found other bytes there: something no recorded call wrote them in between (a kernel of
/// another library, a write through DLPack). The copy is not its bytes, so it has none: said once.
void note_ring_share_changed(core::Recorder& recorder, const core::CallRecord& record, core::ArrayCapture& array) {
  array.no_data_reason_id = recorder.intern(kRingShareChanged);
  if (device::costs().ring_shares_changed == 1) {
    core::log_warn("a tensor of {} (seq {}) changed on its device since the call before read it, by no call ophook "
                   "records: the OPHOOK_RING_BYTES ring has no bytes for it (its array says why; "
                   "notes.device_statistics.ring_shares_changed counts them)",
                   recorder.op(record.op_id).name, record.seq);
  }
}

void fill_from_kernel(const Expected& entry) {
  auto& array = entry.record->arrays[entry.index];
  const auto& r = entry.readback;
  bool copied = r.count == 0;
  const bool ring_bytes_its_own = r.slot.ring_ticket == 0 || device::holds_its_ring_bytes(r.slot);
  const auto result = device::take(
      r.slot, [&](const std::shared_ptr<const core::SharedCopy>& staged, const device::statistics_kernel::Result& result) {
        if (!r.lent() && !array.data) return;
        if (staged == nullptr) {  // lent: the bytes of a copy the host holds (copy.held)
          core::share_held_copy(array, r.address, r.held_copy, r.nbytes, {});
        } else if (r.lent()) {  // bytes to widen are widened by the writer, and have no address
          auto copy = r.widen == nullptr ? staged
                                         : std::make_shared<const core::SharedCopy>(staged, r.widen, r.count, r.saved_nbytes);
          core::share_staged_copy(array, r.address, std::move(copy), r.saved_nbytes, {result.position, result.by_value});
        } else {
          if (r.widen != nullptr) {
            r.widen(array.data.get(), staged->bytes(), r.count);
          } else {
            std::memcpy(array.data.get(), staged->bytes(), r.nbytes);
          }
          bytes_copied_from_staging += r.nbytes;
        }
        copied = true;
      });
  if (!result || (r.bytes && !copied)) {
    return report_unread(*entry.record, array, {"reading it on the device failed: spec only", "", false});
  }
  // With bytes too where OPHOOK_NAN checks: the check takes the kernel's counts instead of reading
  // the bytes (and widening narrow ones) on the program's thread. Nothing else reads them then: the
  // writer's statistics are the bytes'.
  auto* recorder = core::Recorder::get();
  if (!r.bytes || (recorder != nullptr && recorder->config().nan != core::NanPolicy::Off)) {
    fill_from_kernel(entry, *result, array);
  }
  if (r.bytes) {
    array.captured = true;
  } else if (ring_bytes_its_own && r.slot.ring_ticket != 0) {
    array.on_device = {device::ring_of(r.slot), r.slot.ring_ticket, r.saved_nbytes};
  } else if (r.slot.ring_ticket != 0 && recorder != nullptr) {
    note_ring_share_changed(*recorder, *entry.record, array);
  }
  if (recorder != nullptr) recorder->count_tensor_copied_by_torch();
}

void fill(const Expected& entry, PyObject* result) {
  auto& array = entry.record->arrays[entry.index];
  Unread unread{"reading it back from the device failed: spec only", "", false};
  const bool filled = result != nullptr && !as_unread(result, unread) &&
                      (entry.readback.bytes ? fill_bytes(entry, result, array) : fill_statistics(entry, result, array));
  if (!filled) return report_unread(*entry.record, array, unread);
  if (auto* recorder = core::Recorder::get()) recorder->count_tensor_copied_by_torch();
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

/// Reads back what `batch` (taken out of `expected`) waits for into their records: one copy to
/// the host per device and kind. May release the GIL.
void read_back(std::vector<Expected>& batch) {
  if (batch.empty()) return;
  // The kernel's results first: waited for, no Python.
  std::vector<Expected> generic;
  for (auto& entry : batch) {
    if (!entry.readback.slot.valid()) {
      generic.push_back(std::move(entry));
      continue;
    }
    device::wait(entry.readback.slot);
    fill_from_kernel(entry);
  }
  batch.swap(generic);
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

/// The held check of `record`, if any, taken out of the list.
std::optional<HeldCheck> take_check(const core::CallRecord& record) {
  const auto it = held_checks.find(&record);
  if (it == held_checks.end()) return std::nullopt;
  const HeldCheck check = it->second;
  held_checks.erase(it);
  return check;
}

/// OPHOOK_NAN's check of `record`, now that its values are in, if it was left for later. False
/// when the record is not to be written: a call no level records that was no culprit.
bool judge(core::Recorder& recorder, core::CallRecord& record) {
  const auto check = take_check(record);
  if (!check) return true;
  const bool culprit = fresh_nonfinite(recorder, record, check->first_output, check->inputs_nonfinite_before);
  if (culprit && check->check_only) record.seq = recorder.next_seq();  // its seq, as the checked-at-once get
  if (culprit) announce_nonfinite(recorder, record);
  return culprit || !check->check_only;
}

/// Whether every array `record` waits for waits for the statistics kernel, and (unless `wait`)
/// every result is there; with `wait`, waits for them.
bool kernel_results_in(const core::CallRecord& record, bool wait) {
  for (const auto& entry : entries_of(record)) {
    if (!entry.readback.slot.valid()) return false;
    if (wait) {
      device::wait(entry.readback.slot);
    } else if (!device_statistics::ready(entry.readback.slot)) {
      return false;
    }
  }
  return true;
}

/// The oldest held record, its kernel results in (or waited for, `wait`), filled and submitted.
/// False when it waits for something else.
bool submit_front(core::Recorder& recorder, bool wait) {
  if (held.empty() || !kernel_results_in(*held.front(), wait)) return false;
  core::CallRecord* record = held.front().get();
  auto batch = take_expected(*record);
  for (const auto& entry : batch) fill_from_kernel(entry);
  const bool written = judge(recorder, *record);
  auto front = std::move(held.front());
  held.pop_front();
  if (!held.empty()) held_since = Clock::now();
  if (written) submit_record(recorder, std::move(front));  // else back to the pool, unwritten
  return true;
}

/// Submits the held records, oldest first, whose kernel results are in: no waiting (and no event
/// asked about while a CUDA graph is captured: device_statistics::ready).
void submit_completed(core::Recorder& recorder) {
  if (held.empty()) return;
  while (submit_front(recorder, false)) {
  }
}

/// Waits for the oldest held record's results and submits it: the GPU is far behind.
bool submit_oldest(core::Recorder& recorder) { return submit_front(recorder, true); }

}  // namespace

void expect(core::CallRecord& record, std::uint32_t index, Readback readback) {
  auto& entries = expected[&record];
  entries.push_back({&record, index, std::move(readback)});
  account(entries.back());
}

void withdraw_ring_copies(const core::CallRecord& record) {
  const auto& entries = entries_of(record);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {  // newest first: their rooms go back
    if (it->readback.slot.ring_ticket != 0) device::withdraw_ring_copy(it->readback.slot);
  }
}

void launch_queued() { device::launch_queued(); }

bool awaited(const core::CallRecord& record) noexcept { return expected.contains(&record); }

bool check_later(core::CallRecord& record, std::size_t first_output, std::optional<bool> inputs_nonfinite_before,
                 bool check_only) {
  const auto& entries = entries_of(record);
  if (entries.empty() || std::any_of(entries.begin(), entries.end(),
                                     [](const Expected& entry) { return !entry.readback.slot.valid(); })) {
    return false;
  }
  held_checks.insert_or_assign(&record, HeldCheck{first_output, inputs_nonfinite_before, check_only});
  return true;
}

void resolve(core::CallRecord& record) {
  if (!awaited(record)) return;
  auto batch = take_expected(record);
  read_back(batch);
}

void forget(const core::CallRecord& record) noexcept {
  held_checks.erase(&record);
  for (const auto& entry : take_expected(record)) {
    if (entry.readback.slot.valid()) device::abandon(entry.readback.slot);
  }
}

void defer(core::Recorder& recorder, core::RecordPtr record) {
  const bool checked_later = held_checks.contains(record.get());
  if (recorder.config().mode == core::Mode::Trace && !checked_later) {
    // Trace mode reads values for OPHOOK_NAN's check alone; a call that raised is not checked.
    forget(*record);
    return submit_record(recorder, std::move(record));
  }
  if (held.empty()) held_since = Clock::now();
  held.push_back(std::move(record));
  submit_completed(recorder);
  if (generic_entries == 0) {
    while (held.size() >= kHeldKernelRecords && device_statistics::may_poll() && submit_oldest(recorder)) {
    }
  } else if (held.size() >= kHeldRecords || snapshot_bytes >= kHeldSnapshotBytes ||
             Clock::now() - held_since >= kHeldFor) {
    resolve_held();
  }
  recorder.set_held_records(held.size());
}

/// summary.json's account of the statistics kernel (notes.device_statistics), once it was tried.
void note_kernel_costs() {
  const auto& costs = device::costs();
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr || (costs.devices.empty() && costs.unavailable.empty())) return;
  nlohmann::json note = {{"devices", costs.devices},
                         {"kernels_launched", costs.kernels_launched},
                         {"tensors_read", costs.tensors_read},
                         {"bytes_read", costs.bytes_read},
                         {"bytes_to_host", costs.bytes_to_host},
                         {"synchronizations", costs.synchronizations},
                         {"wait_ms", static_cast<double>(costs.wait_ns) / 1e6},
                         {"launch_failures", costs.launch_failures},
                         {"launches_held_most", costs.launches_held_most},
                         {"copies_unchanged", costs.copies_unchanged},
                         {"bytes_unchanged", costs.bytes_unchanged},
                         {"reads_shared", costs.reads_shared},
                         {"bytes_copied_from_staging", bytes_copied_from_staging},
                         {"staging_waits", costs.staging_waits},
                         {"staging_wait_ms", static_cast<double>(costs.staging_wait_ns) / 1e6}};
  if (costs.ring_bytes > 0) {
    note["ring_bytes_on_device"] = costs.ring_bytes;
    note["ring_copies_skipped"] = costs.ring_copies_skipped;
    note["ring_copies_withdrawn"] = costs.ring_copies_withdrawn;
    note["ring_bytes_copied"] = costs.ring_bytes_copied;
    note["ring_copies_shared"] = costs.ring_copies_shared;
    note["ring_shares_changed"] = costs.ring_shares_changed;
  }
  if (!costs.unavailable.empty()) note["unavailable"] = costs.unavailable;
  recorder->add_note("device_statistics", std::move(note));
}

void resolve_held() {
  note_kernel_costs();
  if (held.empty()) return;
  auto records = std::move(held);
  held.clear();
  std::vector<Expected> batch;
  for (const auto& record : records) {
    for (auto& entry : take_expected(*record)) batch.push_back(std::move(entry));
  }
  read_back(batch);  // other threads may hold records meanwhile: they stay in `held`
  auto* recorder = core::Recorder::get();
  if (recorder == nullptr) return;
  recorder->set_held_records(held.size());
  for (auto& record : records) {
    if (judge(*recorder, *record)) submit_record(*recorder, std::move(record));
  }
}

void register_with_recording() noexcept {
  static const DeviceReads reads{&awaited,       &defer, &launch_queued,          &resolve, &check_later,
                                 &forget, &resolve_held, [] { device::settle_ring(); }};
  register_device_reads(reads);
}

void resolve_held_before_exit() noexcept {
  if (!interpreter_running() || !PyGILState_Check() || thread_state().busy) return;
  try {
    resolve_held();
  } catch (const std::exception&) {
    // The records stay held: the recorder counts them as dropped.
  }
}

}  // namespace ophook::py::device_readback
