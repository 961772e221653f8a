#pragma once

/// The statistics kernel's source text, embedded at build time (src/python/CMakeLists.txt) for
/// NVRTC: torch/cuda/statistics_kernel.cu and the header it includes.
namespace ophook::py::cuda {

extern const char* const kStatisticsKernelSource;
extern const char* const kStatisticsKernelHeader;
inline constexpr const char* kStatisticsKernelHeaderName = "ophook/statistics_kernel.hpp";
inline constexpr const char* kStatisticsKernelName = "ophook_statistics";

}  // namespace ophook::py::cuda
