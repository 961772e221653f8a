#include "torch/devices/held_records.hpp"

#include <chrono>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/engine/device_engines.hpp"
#include "ophook/process/fork_handlers.hpp"
#include "program_pause.hpp"
#include "recording/call_recording.hpp"
#include "recording/device_reads.hpp"
#include "recording/nan_check.hpp"
#include "thread_state.hpp"
#include "torch/devices/device_costs_note.hpp"
#include "torch/devices/device_readback.hpp"
#include "torch/devices/device_statistics.hpp"
#include "torch/devices/kernel_results.hpp"

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

// Never destroyed: it may hold Python references, which must not be released once Python has
// finalised (at exit, records still held are counted as dropped by the recorder).
auto& held = *new std::deque<core::RecordPtr>;  // finished records, in the order they finished
Clock::time_point held_since;

/// OPHOOK_NAN's check of a held record, done when its kernel results arrive (check_later).
struct HeldCheck {
  std::size_t first_output;
  std::optional<bool> inputs_nonfinite_before;
  bool check_only;  // a call no level records: written, with a seq, only if it is the culprit
  PyRef evidence;   // the culprit check's, gathered while the call ran (nan_check.hpp)
};
auto& held_checks = *new std::unordered_map<const core::CallRecord*, HeldCheck>;

// A forked child's held records belong to the parent, which submits them: the child forgets them,
// leaked, since their tensors live on a device the child must not touch; and the device engines,
// whose CUDA contexts it cannot use.
const bool fork_handlers_set = [] {
  core::set_fork_handler(core::ForkStage::HeldReadbacks, {nullptr, nullptr, []() noexcept {
                                                             for (auto& record : held) (void)record.release();
                                                             held.clear();
                                                             for (auto& [record, check] : held_checks) {
                                                               (void)check.evidence.release();
                                                             }
                                                             held_checks.clear();
                                                             forget_expected_after_fork();
                                                           }});
  core::set_fork_handler(core::ForkStage::DeviceEngines, {nullptr, nullptr, &device::forget_engines});
  return true;
}();

/// The held check of `record`, if any, taken out of the list.
std::optional<HeldCheck> take_check(const core::CallRecord& record) {
  const auto it = held_checks.find(&record);
  if (it == held_checks.end()) return std::nullopt;
  HeldCheck check = std::move(it->second);
  held_checks.erase(it);
  return check;
}

/// OPHOOK_NAN's check of `record`, now that its values are in, if it was left for later. False
/// when the record is not to be written: a call no level records that was no culprit.
bool judge(core::Recorder& recorder, core::CallRecord& record) {
  const auto check = take_check(record);
  if (!check) return true;
  const bool culprit = convicted(
      record, fresh_nonfinite(recorder, record, check->first_output, check->inputs_nonfinite_before),
      check->evidence.get());
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
  for (const auto& entry : batch) take_kernel_result(entry);
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

bool check_later(core::CallRecord& record, std::size_t first_output, std::optional<bool> inputs_nonfinite_before,
                 bool check_only) {
  const auto& entries = entries_of(record);
  if (entries.empty() || std::any_of(entries.begin(), entries.end(),
                                     [](const Expected& entry) { return !entry.readback.slot.valid(); })) {
    return false;
  }
  // The node's state is gone by the time its values are in: the culprit check's evidence now.
  held_checks.insert_or_assign(&record, HeldCheck{first_output, inputs_nonfinite_before, check_only,
                                                  PyRef::steal(gather_culprit_evidence(record))});
  return true;
}

void forget(const core::CallRecord& record) noexcept {
  held_checks.erase(&record);
  drop_expected(record);
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
  if (torch_reads_waiting() == 0) {
    while (held.size() >= kHeldKernelRecords && device_statistics::may_poll() && submit_oldest(recorder)) {
    }
  } else if (held.size() >= kHeldRecords || snapshot_bytes_waiting() >= kHeldSnapshotBytes ||
             Clock::now() - held_since >= kHeldFor) {
    resolve_held();
  }
  recorder.counters().set_held_records(held.size());
}

void resolve_held() {
  note_device_costs();
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
  recorder->counters().set_held_records(held.size());
  for (auto& record : records) {
    if (judge(*recorder, *record)) submit_record(*recorder, std::move(record));
  }
}

void register_with_recording() noexcept {
  static const DeviceReads reads{&awaited,
                                 &defer,
                                 [] { device::launch_queued(); },
                                 &resolve,
                                 &check_later,
                                 &forget,
                                 &resolve_held,
                                 [] { device::settle_ring(); }};
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
