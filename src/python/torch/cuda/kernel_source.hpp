#pragma once

/// The statistics kernel's source text, embedded at build time (src/python/CMakeLists.txt) for
/// NVRTC: torch/cuda/statistics_kernel.cu and the headers it includes.
namespace ophook::py::cuda {

inline constexpr int kStatisticsKernelHeaderCount = 4;
extern const char* const kStatisticsKernelSource;
/// The headers' texts and the names the source includes them by, in the same order.
extern const char* const kStatisticsKernelHeaders[kStatisticsKernelHeaderCount];
inline constexpr const char* kStatisticsKernelHeaderNames[kStatisticsKernelHeaderCount] = {
    "ophook/statistics_kernel.hpp", "ophook/statistics_moments.hpp", "ophook/statistics_job.hpp",
    "ophook/statistics_elements.hpp"};
inline constexpr const char* kStatisticsKernelName = "ophook_statistics";
inline constexpr const char* kCopyChangedKernelName = "ophook_copy_changed";

}  // namespace ophook::py::cuda
