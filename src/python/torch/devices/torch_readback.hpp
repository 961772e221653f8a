#pragma once
#include <vector>

#include "torch/devices/readback_entry.hpp"


/// Waiting arrays that the statistics kernel does not read, read back through torch: one call of
/// _torch.device.resolve per batch (one copy to the host per device and kind), the snapshots'
/// bytes into their arrays' reserved buffers, statistics or the NaN and finite counts from the
/// values torch computed. GIL required; may release it.
namespace ophook::py::device_readback {

/// Reads back `batch` (none of whose entries waits for the kernel) into their records; an array
/// whose read-back fails gets a reason instead (report_unread).
void read_back_through_torch(std::vector<Expected>& batch);

}  // namespace ophook::py::device_readback
