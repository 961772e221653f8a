#include "device/driver/cuda_driver.hpp"

#include <dlfcn.h>

#include <optional>

namespace ophook::device {
namespace {

/// dlsym'd function `name` into `slot`; false when missing.
template <typename F>
bool find(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(library, name));  // dlsym's result is the function
  return slot != nullptr;
}

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
      {"cuInit", find(library, "cuInit", api.init)},
      {"cuDeviceGet", find(library, "cuDeviceGet", api.device_get)},
      {"cuDeviceGetAttribute", find(library, "cuDeviceGetAttribute", api.device_get_attribute)},
      {"cuDevicePrimaryCtxRetain", find(library, "cuDevicePrimaryCtxRetain", api.primary_context_retain)},
      {"cuCtxGetCurrent", find(library, "cuCtxGetCurrent", api.context_get_current)},
      {"cuCtxPushCurrent_v2", find(library, "cuCtxPushCurrent_v2", api.context_push)},
      {"cuCtxPopCurrent_v2", find(library, "cuCtxPopCurrent_v2", api.context_pop)},
      {"cuModuleLoadData", find(library, "cuModuleLoadData", api.module_load_data)},
      {"cuModuleGetFunction", find(library, "cuModuleGetFunction", api.module_get_function)},
      {"cuLaunchKernel", find(library, "cuLaunchKernel", api.launch_kernel)},
      {"cuMemAlloc_v2", find(library, "cuMemAlloc_v2", api.mem_alloc)},
      {"cuMemsetD32_v2", find(library, "cuMemsetD32_v2", api.memset_d32)},
      {"cuMemHostAlloc", find(library, "cuMemHostAlloc", api.host_alloc)},
      {"cuMemHostGetDevicePointer_v2", find(library, "cuMemHostGetDevicePointer_v2", api.host_get_device_pointer)},
      {"cuEventCreate", find(library, "cuEventCreate", api.event_create)},
      {"cuEventRecord", find(library, "cuEventRecord", api.event_record)},
      {"cuEventQuery", find(library, "cuEventQuery", api.event_query)},
      {"cuEventSynchronize", find(library, "cuEventSynchronize", api.event_synchronize)},
      {"cuStreamIsCapturing", find(library, "cuStreamIsCapturing", api.stream_is_capturing)},
      {"cuStreamCreate", find(library, "cuStreamCreate", api.stream_create)},
      {"cuStreamSynchronize", find(library, "cuStreamSynchronize", api.stream_synchronize)},
      {"cuStreamQuery", find(library, "cuStreamQuery", api.stream_query)},
      {"cuMemcpyDtoHAsync_v2", find(library, "cuMemcpyDtoHAsync_v2", api.memcpy_dtoh_async)},
      {"cuThreadExchangeStreamCaptureMode",
       find(library, "cuThreadExchangeStreamCaptureMode", api.thread_exchange_capture_mode)},
      {"cuGetErrorString", find(library, "cuGetErrorString", api.get_error_string)},
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
