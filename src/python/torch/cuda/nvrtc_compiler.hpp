#pragma once
#include <optional>
#include <string>
#include <vector>

/// Compiles the statistics kernel at run time with NVRTC, which every CUDA build of torch ships
/// (its pip wheels as nvidia/*/lib/libnvrtc.so.*). Loaded with dlopen: nothing links against it.
namespace ophook::py::cuda {

struct CompiledKernel {
  std::string image;  // a cubin for the device's architecture, else PTX the driver compiles
  std::string target; // "sm_90", "compute_120"…
};

/// Compiles for a device of compute capability `major`.`minor`, with the first NVRTC that loads
/// from `libraries` (paths) or by its usual names. nullopt with `why` when none loads or the
/// compilation fails (its log in `why`).
std::optional<CompiledKernel> compile_statistics_kernel(int major, int minor, const std::vector<std::string>& libraries,
                                                        std::string& why);

}  // namespace ophook::py::cuda
