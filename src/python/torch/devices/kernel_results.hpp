#pragma once
#include <cstdint>

#include "device/kernel/statistics_kernel.hpp"
#include "ophook/model/record.hpp"
#include "torch/devices/readback_entry.hpp"

/// The statistics kernel's results taken into the records whose arrays wait for them: statistics
/// (in `trace` mode the NaN and Inf counts alone), `dump`'s bytes, the ring's bytes left on the
/// device. GIL required.
namespace ophook::py::device_readback {

/// Statistics (in `trace` mode the NaN and Inf counts alone) from the kernel's `result` for
/// `entry`, into `array`.
void statistics_from_kernel(const Expected& entry, const device::statistics_kernel::Result& result,
                            core::ArrayCapture& array);

/// Takes the kernel's result for `entry` (ready or waited for) into its array: in `dump` the
/// bytes it copied — lent where the device staged them (core::share_staged_copy; where the file's
/// dtype is wider, by a copy the writer widens), copied (and widened) when small; or, where the
/// device found them unchanged and sent nothing, the copy it compared them with — from which the
/// writer computes the statistics as for any array; and the kernel's statistics, which with bytes
/// only OPHOOK_NAN's check reads (so only when it checks).
void take_kernel_result(const Expected& entry);

/// `dump`'s bytes the program's thread copied out of the staging memory (arrays under
/// core::kSharedCopyMinBytes, and those widened for their files): the others are lent to records.
std::uint64_t bytes_copied_from_staging() noexcept;

}  // namespace ophook::py::device_readback
