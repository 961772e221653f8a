#pragma once

namespace ophook::py::device_readback {

/// summary.json's account of the statistics kernel (notes.device_statistics: what the engines
/// cost, device::Costs), once a device engine was tried; replaced by the latest at each call.
void note_device_costs();

}  // namespace ophook::py::device_readback
