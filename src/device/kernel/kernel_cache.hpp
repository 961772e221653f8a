#pragma once
#include <optional>
#include <string>

/// Statistics kernels compiled by NVRTC, kept on disk between processes (docs/devices.md,
/// "Statistics on a CUDA device"): compiling takes seconds, once per process without it (every
/// rank of a run, every short script). An image is kept under a name that holds what it was made
/// from (the kernel's source, NVRTC's version, the target), so a changed kernel or NVRTC never
/// finds an old image. The directory: $XDG_CACHE_HOME/ophook, else $HOME/.cache/ophook.
namespace ophook::device {

/// The image kept under `name`, nullopt when there is none, it cannot be read, or it is not a
/// kernel image (the kernel's name is not in it).
std::optional<std::string> read_cached_kernel(const std::string& name);

/// Keeps `image` under `name`, written whole or not at all; false when there is no cache
/// directory or it cannot be written (the next process compiles again).
bool store_cached_kernel(const std::string& name, const std::string& image);

}  // namespace ophook::device
