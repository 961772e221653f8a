#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

/// The CUDA driver API functions ophook's statistics engine uses, loaded with dlopen from
/// libcuda.so.1 when the first CUDA tensor is read: nothing links against CUDA, and a machine
/// without a driver never loads it. Declared here by their C signatures (handles are opaque
/// pointers, results plain ints) so that no CUDA header is needed to build.
namespace ophook::device {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600;
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) to CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD (908): a
// graph capture refuses the call; any other error of a stream call is the context's (a fault).
constexpr CUresult kFirstCaptureError = 900, kLastCaptureError = 908;
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;
constexpr unsigned kHostAllocPortable = 1, kHostAllocDeviceMap = 2;
constexpr unsigned kEventDisableTiming = 2;
constexpr unsigned kStreamNonBlocking = 1;    // CU_STREAM_NON_BLOCKING: no implicit wait for the legacy stream
constexpr int kStreamCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_get_attribute)(int*, int, CUdevice);
  CUresult (*primary_context_retain)(CUcontext*, CUdevice);
  CUresult (*context_get_current)(CUcontext*);
  CUresult (*context_push)(CUcontext);
  CUresult (*context_pop)(CUcontext*);
  CUresult (*module_load_data)(CUmodule*, const void*);
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**);
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t);
  CUresult (*memset_d32)(CUdeviceptr, unsigned, std::size_t);
  CUresult (*host_alloc)(void**, std::size_t, unsigned);
  CUresult (*host_get_device_pointer)(CUdeviceptr*, void*, unsigned);
  CUresult (*event_create)(CUevent*, unsigned);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_query)(CUevent);
  CUresult (*event_synchronize)(CUevent);
  CUresult (*stream_is_capturing)(CUstream, int*);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*stream_query)(CUstream);
  CUresult (*memcpy_dtoh_async)(void*, CUdeviceptr, std::size_t, CUstream);
  CUresult (*thread_exchange_capture_mode)(int*);
  CUresult (*get_error_string)(CUresult, const char**);
};

/// The driver, loaded on first use; null when libcuda.so.1 or one of the functions is missing
/// (`why` then says which). Not thread-safe on first use: the caller serialises it.
const Driver* driver(std::string& why);

/// "CUDA_ERROR_… (code)" for a driver result.
std::string describe(const Driver& api, CUresult result);

/// Makes `context` current on this thread for the scope when it is not already (torch's runtime
/// has normally made the device's primary context current), and restores the previous one.
class ContextScope {
 public:
  ContextScope(const Driver& api, CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const Driver& api_;
  bool pushed_ = false;
};

/// This thread in relaxed stream capture mode for the scope: what it does is neither refused nor
/// invalidates a CUDA graph another thread is capturing in global mode (the mode torch uses).
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const Driver& api);
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  const Driver& api_;
  int previous_ = kStreamCaptureModeRelaxed;
  bool exchanged_ = false;
};

}  // namespace ophook::device
