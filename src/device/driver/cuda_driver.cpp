#include "device/driver/cuda_driver.hpp"

#include <dlfcn.h>

#include <optional>

#include "device/driver/library_symbols.hpp"

namespace ophook::device {
namespace {

std::optional<Driver> load(std::string& why) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    why = "libcuda.so.1 not found";
    return std::nullopt;
  }
  Driver api{};
  // The _v2 names are the current ABI of these functions (64-bit sizes and addresses).
  const struct {
    const char* name;
    bool found;
  } symbols[] = {
      {"cuInit", find_symbol(library, "cuInit", api.init)},
      {"cuDeviceGet", find_symbol(library, "cuDeviceGet", api.device_get)},
      {"cuDeviceGetAttribute", find_symbol(library, "cuDeviceGetAttribute", api.device_get_attribute)},
      {"cuDevicePrimaryCtxRetain", find_symbol(library, "cuDevicePrimaryCtxRetain", api.primary_context_retain)},
      {"cuCtxGetCurrent", find_symbol(library, "cuCtxGetCurrent", api.context_get_current)},
      {"cuCtxPushCurrent_v2", find_symbol(library, "cuCtxPushCurrent_v2", api.context_push)},
      {"cuCtxPopCurrent_v2", find_symbol(library, "cuCtxPopCurrent_v2", api.context_pop)},
      {"cuModuleLoadData", find_symbol(library, "cuModuleLoadData", api.module_load_data)},
      {"cuModuleGetFunction", find_symbol(library, "cuModuleGetFunction", api.module_get_function)},
      {"cuLaunchKernel", find_symbol(library, "cuLaunchKernel", api.launch_kernel)},
      {"cuMemAlloc_v2", find_symbol(library, "cuMemAlloc_v2", api.mem_alloc)},
      {"cuMemsetD32_v2", find_symbol(library, "cuMemsetD32_v2", api.memset_d32)},
      {"cuMemHostAlloc", find_symbol(library, "cuMemHostAlloc", api.host_alloc)},
      {"cuMemHostGetDevicePointer_v2", find_symbol(library, "cuMemHostGetDevicePointer_v2", api.host_get_device_pointer)},
      {"cuEventCreate", find_symbol(library, "cuEventCreate", api.event_create)},
      {"cuEventRecord", find_symbol(library, "cuEventRecord", api.event_record)},
      {"cuEventQuery", find_symbol(library, "cuEventQuery", api.event_query)},
      {"cuEventSynchronize", find_symbol(library, "cuEventSynchronize", api.event_synchronize)},
      {"cuStreamIsCapturing", find_symbol(library, "cuStreamIsCapturing", api.stream_is_capturing)},
      {"cuStreamCreate", find_symbol(library, "cuStreamCreate", api.stream_create)},
      {"cuStreamSynchronize", find_symbol(library, "cuStreamSynchronize", api.stream_synchronize)},
      {"cuStreamQuery", find_symbol(library, "cuStreamQuery", api.stream_query)},
      {"cuMemcpyDtoHAsync_v2", find_symbol(library, "cuMemcpyDtoHAsync_v2", api.memcpy_dtoh_async)},
      {"cuThreadExchangeStreamCaptureMode",
       find_symbol(library, "cuThreadExchangeStreamCaptureMode", api.thread_exchange_capture_mode)},
      {"cuGetErrorString", find_symbol(library, "cuGetErrorString", api.get_error_string)},
  };
  for (const auto& symbol : symbols) {
    if (!symbol.found) {
      why = std::string("libcuda.so.1 has no ") + symbol.name;
      return std::nullopt;
    }
  }
  if (const CUresult result = api.init(0); result != kSuccess) {
    why = "cuInit failed: " + describe(api, result);
    return std::nullopt;
  }
  return api;  // the library stays loaded for the process
}

}  // namespace

const Driver* driver(std::string& why) {
  static std::string load_error;
  static const std::optional<Driver> loaded = load(load_error);
  if (!loaded) why = load_error;
  return loaded ? &*loaded : nullptr;
}

std::string describe(const Driver& api, CUresult result) {
  const char* text = nullptr;
  if (api.get_error_string(result, &text) != kSuccess || text == nullptr) text = "unknown CUDA error";
  return std::string(text) + " (" + std::to_string(result) + ")";
}

ContextScope::ContextScope(const Driver& api, CUcontext context) : api_(api) {
  CUcontext current = nullptr;
  if (api_.context_get_current(&current) == kSuccess && current == context) return;
  pushed_ = api_.context_push(context) == kSuccess;
}

ContextScope::~ContextScope() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  api_.context_pop(&popped);
}

RelaxedCapture::RelaxedCapture(const Driver& api) : api_(api) {
  exchanged_ = api_.thread_exchange_capture_mode(&previous_) == kSuccess;
}

RelaxedCapture::~RelaxedCapture() {
  if (exchanged_) api_.thread_exchange_capture_mode(&previous_);
}

}  // namespace ophook::device
