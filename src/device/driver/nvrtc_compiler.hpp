#pragma once
#include <optional>
#include <string>
#include <vector>

/// Compiles the statistics kernel at run time with NVRTC, which every CUDA build of torch ships
/// (its pip wheels as nvidia/*/lib/libnvrtc.so.*). Loaded with dlopen: nothing links against it.
namespace ophook::device {

struct CompiledKernel {
  std::string image;  // a cubin for the device's architecture, else PTX the driver compiles
  std::string target; // "sm_90", "compute_120"…
  bool from_cache = false;  // read from the kernel cache (kernel_cache.hpp), not compiled now
};

/// The kernel for a device of compute capability `major`.`minor`: from the kernel cache where an
/// earlier process kept it (unless `cached` is false), else compiled with the first NVRTC that
/// loads from `libraries` (paths) or by its usual names, and kept there. nullopt with `why` when
/// none loads or the compilation fails (its log in `why`).
std::optional<CompiledKernel> compile_statistics_kernel(int major, int minor, const std::vector<std::string>& libraries,
                                                        std::string& why, bool cached = true);

}  // namespace ophook::device
