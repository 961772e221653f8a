#pragma once

/// The statistics kernel's source text, embedded at build time (src/python/CMakeLists.txt) for
/// NVRTC: src/device/kernel/statistics_kernel.cu and the headers it includes.
namespace ophook::device {

inline constexpr int kStatisticsKernelHeaderCount = 4;
extern const char* const kStatisticsKernelSource;
/// The headers' texts and the names the source includes them by, in the same order.
extern const char* const kStatisticsKernelHeaders[kStatisticsKernelHeaderCount];
inline constexpr const char* kStatisticsKernelHeaderNames[kStatisticsKernelHeaderCount] = {
    "device/kernel/statistics_kernel.hpp", "device/kernel/statistics_moments.hpp", "device/kernel/statistics_job.hpp",
    "device/kernel/statistics_elements.hpp"};
inline constexpr const char* kStatisticsKernelName = "ophook_statistics";
inline constexpr const char* kCopyChangedKernelName = "ophook_copy_changed";

}  // namespace ophook::device
