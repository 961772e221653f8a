#include "torch/devices/kernel_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "device/engine/device_engines.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/log.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/stats/stats.hpp"
#include "torch/torch_device_module.hpp"

namespace ophook::py::device_readback {
namespace {

/// Why a tensor that shared the ring's copy of an earlier read has no bytes (note_ring_share_changed).
constexpr const char* kRingShareChanged =
    "changed on its device, by no recorded call, since the read whose copy in the OPHOOK_RING_BYTES ring it shares: "
    "no bytes kept";

std::uint64_t staging_bytes_copied = 0;

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

}  // namespace

void statistics_from_kernel(const Expected& entry, const device::statistics_kernel::Result& result,
                            core::ArrayCapture& array) {
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

void take_kernel_result(const Expected& entry) {
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
          staging_bytes_copied += r.nbytes;
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
    statistics_from_kernel(entry, *result, array);
  }
  if (r.bytes) {
    array.captured = true;
  } else if (ring_bytes_its_own && r.slot.ring_ticket != 0) {
    array.on_device = {device::ring_of(r.slot), r.slot.ring_ticket, r.saved_nbytes};
  } else if (r.slot.ring_ticket != 0 && recorder != nullptr) {
    note_ring_share_changed(*recorder, *entry.record, array);
  }
  if (recorder != nullptr) recorder->counters().count_tensor_copied_by_torch();
}

std::uint64_t bytes_copied_from_staging() noexcept { return staging_bytes_copied; }

}  // namespace ophook::py::device_readback
