#include "torch/devices/device_costs_note.hpp"

#include <nlohmann/json.hpp>

#include "device/engine/device_engines.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"
#include "torch/devices/kernel_results.hpp"

namespace ophook::py::device_readback {

void note_device_costs() {
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
                         {"bytes_copied_from_staging", bytes_copied_from_staging()},
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
  recorder->facts().add_note("device_statistics", std::move(note));
}

}  // namespace ophook::py::device_readback
