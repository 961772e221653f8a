#include "device/driver/nvrtc_compiler.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <span>
#include <string_view>

#define XXH_INLINE_ALL  // header-only: nothing more for the extension to load
#include <xxhash.h>

#include "device/driver/library_symbols.hpp"
#include "device/kernel/kernel_cache.hpp"
#include "device/kernel/kernel_source.hpp"

namespace ophook::device {
namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*log_size)(nvrtcProgram, std::size_t*);
  nvrtcResult (*log)(nvrtcProgram, char*);
  nvrtcResult (*cubin_size)(nvrtcProgram, std::size_t*);
  nvrtcResult (*cubin)(nvrtcProgram, char*);
  nvrtcResult (*ptx_size)(nvrtcProgram, std::size_t*);
  nvrtcResult (*ptx)(nvrtcProgram, char*);
  nvrtcResult (*destroy)(nvrtcProgram*);
  nvrtcResult (*architecture_count)(int*);
  nvrtcResult (*architectures)(int*);
  nvrtcResult (*version)(int*, int*);
};

std::optional<Nvrtc> load(const std::vector<std::string>& libraries, std::string& why) {
  std::vector<std::string> candidates = libraries;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}) {
    candidates.emplace_back(name);
  }
  for (const auto& candidate : candidates) {
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) continue;
    Nvrtc api{};
    const bool complete = find_symbol(library, "nvrtcCreateProgram", api.create) &&
                          find_symbol(library, "nvrtcCompileProgram", api.compile) &&
                          find_symbol(library, "nvrtcGetProgramLogSize", api.log_size) &&
                          find_symbol(library, "nvrtcGetProgramLog", api.log) && find_symbol(library, "nvrtcGetPTXSize", api.ptx_size) &&
                          find_symbol(library, "nvrtcGetPTX", api.ptx) && find_symbol(library, "nvrtcDestroyProgram", api.destroy) &&
                          find_symbol(library, "nvrtcGetNumSupportedArchs", api.architecture_count) &&
                          find_symbol(library, "nvrtcGetSupportedArchs", api.architectures) &&
                          find_symbol(library, "nvrtcVersion", api.version);
    // Cubins need NVRTC 11.1 or later; without them, PTX.
    if (!find_symbol(library, "nvrtcGetCUBINSize", api.cubin_size) || !find_symbol(library, "nvrtcGetCUBIN", api.cubin)) {
      api.cubin_size = nullptr, api.cubin = nullptr;
    }
    if (complete) return api;
    dlclose(library);
  }
  why = "NVRTC (libnvrtc.so) not found";
  return std::nullopt;
}

/// The architecture to compile for: the device's own when NVRTC knows it (a cubin), else the
/// newest NVRTC knows below it (PTX, which the driver compiles for the device); 0 when NVRTC
/// knows none at or below it (a GPU older than this CUDA supports).
std::pair<int, bool> choose_architecture(const Nvrtc& api, int device) {
  int count = 0;
  if (api.architecture_count(&count) != 0 || count <= 0) return {device, api.cubin != nullptr};
  std::vector<int> known(static_cast<std::size_t>(count));
  api.architectures(known.data());
  if (std::find(known.begin(), known.end(), device) != known.end()) return {device, api.cubin != nullptr};
  int best = 0;
  for (const int arch : known) {
    if (arch <= device) best = std::max(best, arch);
  }
  return {best, false};
}

/// The kernel cache's name for the image of `target` that `api` compiles from the embedded
/// source with `options`: it changes with any of them.
std::string cache_name(const Nvrtc& api, const std::string& target, std::span<const char* const> options) {
  int major = 0, minor = 0;
  api.version(&major, &minor);
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  const auto add = [&](std::string_view text) { XXH3_64bits_update(&state, text.data(), text.size() + 1); };
  add(std::to_string(major) + "." + std::to_string(minor));
  for (const char* option : options) add(option);
  add(kStatisticsKernelSource);
  for (int i = 0; i < kStatisticsKernelHeaderCount; ++i) add(kStatisticsKernelHeaders[i]);
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(&state)));
  return "statistics_kernel-" + target + "-" + digest + (target.starts_with("sm_") ? ".cubin" : ".ptx");
}

}  // namespace

std::optional<CompiledKernel> compile_statistics_kernel(int major, int minor, const std::vector<std::string>& libraries,
                                                        std::string& why, bool cached) {
  static const std::optional<Nvrtc> loaded = load(libraries, why);
  if (!loaded) {
    if (why.empty()) why = "NVRTC (libnvrtc.so) not found";
    return std::nullopt;
  }
  const Nvrtc& api = *loaded;
  const auto [arch, cubin] = choose_architecture(api, major * 10 + minor);
  if (arch == 0) {
    why = "this NVRTC compiles for no GPU as old as sm_" + std::to_string(major * 10 + minor);
    return std::nullopt;
  }
  CompiledKernel out;
  out.target = (cubin ? "sm_" : "compute_") + std::to_string(arch);
  const std::string architecture = "--gpu-architecture=" + out.target;
  const char* const options[] = {architecture.c_str(), "--std=c++17"};
  const std::string name = cache_name(api, out.target, options);
  if (cached) {
    if (auto image = read_cached_kernel(name)) {
      out.image = std::move(*image);
      out.from_cache = true;
      return out;
    }
  }
  nvrtcProgram program = nullptr;
  if (api.create(&program, kStatisticsKernelSource, "statistics_kernel.cu", kStatisticsKernelHeaderCount,
                 kStatisticsKernelHeaders, kStatisticsKernelHeaderNames) != 0) {
    why = "nvrtcCreateProgram failed";
    return std::nullopt;
  }
  const bool compiled = api.compile(program, 2, options) == 0;
  std::size_t size = 0;
  if (!compiled) {
    std::string log;
    if (api.log_size(program, &size) == 0 && size > 1) {
      log.resize(size);
      api.log(program, log.data());
      log.resize(size - 1);
    }
    why = "NVRTC could not compile the statistics kernel for " + out.target + ": " + log;
    api.destroy(&program);
    return std::nullopt;
  }
  const auto take = [&](auto size_of, auto image_of) {
    if (size_of(program, &size) != 0) return false;
    out.image.resize(size);
    return image_of(program, out.image.data()) == 0;
  };
  const bool taken = cubin ? take(api.cubin_size, api.cubin) : take(api.ptx_size, api.ptx);
  api.destroy(&program);
  if (!taken) {
    why = "NVRTC compiled the statistics kernel but gave no image";
    return std::nullopt;
  }
  (void)store_cached_kernel(name, out.image);  // where it cannot be kept, the next process compiles it again
  return out;
}

}  // namespace ophook::device
