// A stand-in for libcuda.so.1, for the tests and benchmarks of ophook's CUDA backend on machines
// without a GPU (OPHOOK_TEST_FAKE_DEVICE_DRIVER=1 with OPHOOK_TENSOR_COPY=fake-device: CPU tensors
// go through src/device/driver/cuda_backend.cpp and this library, found first on
// LD_LIBRARY_PATH). Its "device" is the host: device and host memory are the same, and a launch of
// the statistics kernel runs the kernel's host arithmetic (ophook/statistics_kernel.hpp) at once,
// on tensors that are CPU tensors, but its results and stamps land in host memory only three
// launches later, when a stream or event is waited for, or a little at each question about a
// stream: as behind a GPU the program runs ahead of. Events pass likewise.
//
// It counts every call by function and writes the counts as JSON at exit to
// $OPHOOK_TEST_FAKE_CUDA_CALLS, so that a test or benchmark can say how many driver calls a
// recorded call cost. OPHOOK_TEST_FAKE_CUDA_FAIL_AT=N makes the statistics launches from the N-th
// on fail on the device: their results never land, and every stream and event call reports the
// error, as a real context does after a fault.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/kernel/statistics_kernel.hpp"

namespace {

namespace k = ophook::device::statistics_kernel;

using CUresult = int;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kNotReady = 600, kIllegalAddress = 700;
constexpr std::uint64_t kLag = 3;  // launches a launch's results trail behind

struct Landing {
  struct Job {
    std::uint32_t slot;
    k::Result result;
    k::RingCopy copied;  // what became of its copy into the ring
  };
  std::uint64_t launch = 0;  // its number, from 1
  bool failed = false;
  std::vector<Job> results;
  std::uint64_t results_address = 0, stamps_address = 0, copies_address = 0, stamp = 0;
};

/// The fake device: launches in flight and the calls counted, behind one lock (the ring's copies
/// come from the writer thread).
struct Device {
  std::mutex lock;
  std::map<std::string, std::uint64_t> calls;
  std::deque<Landing> in_flight;
  std::vector<k::Result> on_device = std::vector<k::Result>(1 << 16);  // each slot's latest result, at once
  std::uint64_t launches = 0;
  std::uint64_t fail_at = 0;  // OPHOOK_TEST_FAKE_CUDA_FAIL_AT
  bool faulted = false;       // a launch failed: every later question about work says so

  Device() {
    if (const char* at = std::getenv("OPHOOK_TEST_FAKE_CUDA_FAIL_AT")) fail_at = std::strtoull(at, nullptr, 10);
  }

  ~Device() {
    const char* path = std::getenv("OPHOOK_TEST_FAKE_CUDA_CALLS");
    if (path == nullptr) return;
    std::ofstream(path) << nlohmann::json(calls).dump() << '\n';
  }

  /// Lands the results of the launches up to number `launch`.
  void land_through(std::uint64_t launch) {
    while (!in_flight.empty() && in_flight.front().launch <= launch) {
      const Landing& landing = in_flight.front();
      if (!landing.failed) {
        auto* results = reinterpret_cast<k::Result*>(landing.results_address);  // NOLINT(performance-no-int-to-ptr)
        auto* stamps = reinterpret_cast<std::uint64_t*>(landing.stamps_address);  // NOLINT(performance-no-int-to-ptr)
        auto* copies = reinterpret_cast<std::uint32_t*>(landing.copies_address);  // NOLINT(performance-no-int-to-ptr)
        for (const auto& [slot, result, copied] : landing.results) {
          results[slot] = result, copies[slot] = copied, stamps[slot] = landing.stamp;
        }
      }
      in_flight.pop_front();
    }
  }

  /// What a question about the work so far answers once it is all done.
  CUresult outcome() const { return faulted ? kIllegalAddress : kSuccess; }
};

Device& device() {
  static Device instance;
  return instance;
}

/// Counts the call and holds the device's lock for the caller.
std::unique_lock<std::mutex> counted(const char* name) {
  auto& d = device();
  std::unique_lock<std::mutex> held(d.lock);
  ++d.calls[name];
  return held;
}

// Handles: the fake context, module and functions are addresses of these.
int context_object = 0, module_object = 0, statistics_function = 0, copy_function = 0, stream_object = 0;
thread_local int capture_mode = 0;

struct Event {
  std::uint64_t launch = 0;  // the launch count when recorded
};

}  // namespace

extern "C" {

CUresult cuInit(unsigned /*flags*/) {
  auto held = counted("cuInit");
  return kSuccess;
}

CUresult cuDeviceGet(int* device_out, int ordinal) {
  auto held = counted("cuDeviceGet");
  if (ordinal != 0) return kInvalidValue;
  *device_out = 0;
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, int /*device*/) {
  auto held = counted("cuDeviceGetAttribute");
  *value = attribute == 75 ? 9 : 0;  // compute capability 9.0: NVRTC has a target for it
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void** context, int /*device*/) {
  auto held = counted("cuDevicePrimaryCtxRetain");
  *context = &context_object;
  return kSuccess;
}

CUresult cuCtxGetCurrent(void** context) {
  auto held = counted("cuCtxGetCurrent");
  *context = &context_object;  // torch's runtime has made it current, as on a GPU
  return kSuccess;
}

CUresult cuCtxPushCurrent_v2(void* /*context*/) {
  auto held = counted("cuCtxPushCurrent_v2");
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(void** context) {
  auto held = counted("cuCtxPopCurrent_v2");
  *context = &context_object;
  return kSuccess;
}

CUresult cuModuleLoadData(void** module, const void* /*image*/) {
  auto held = counted("cuModuleLoadData");
  *module = &module_object;
  return kSuccess;
}

CUresult cuModuleGetFunction(void** function, void* /*module*/, const char* name) {
  auto held = counted("cuModuleGetFunction");
  if (std::strcmp(name, "ophook_statistics") == 0) {
    *function = &statistics_function;
  } else if (std::strcmp(name, "ophook_copy_changed") == 0) {
    *function = &copy_function;
  } else {
    return kInvalidValue;
  }
  return kSuccess;
}

CUresult cuLaunchKernel(void* function, unsigned /*grid_x*/, unsigned /*grid_y*/, unsigned /*grid_z*/,
                        unsigned /*block_x*/, unsigned /*block_y*/, unsigned /*block_z*/, unsigned /*shared*/,
                        void* /*stream*/, void** parameters, void** /*extra*/) {
  auto held = counted("cuLaunchKernel");
  auto& d = device();
  const auto& params = *static_cast<const k::LaunchParams*>(parameters[0]);
  if (function == &copy_function) {  // runs after the statistics launch before it: its results are known
    for (std::uint32_t j = 0; j < params.jobs; ++j) {
      if (!k::unchanged(params.job[j], d.on_device.data())) k::copy_part(params.job[j], 0, 1);
    }
    return kSuccess;
  }
  ++d.launches;
  d.faulted = d.faulted || (d.fail_at != 0 && d.launches >= d.fail_at);
  Landing landing{d.launches, d.faulted, {}, params.results, params.stamps, params.copies, params.stamp};
  if (!landing.failed) {  // the ring's gate and the verdicts where the backend put them, in "device memory"
    k::run_on_host(params, k::summarise_job, [&](std::uint32_t slot, const k::Result& result, k::RingCopy copied) {
      d.on_device[slot] = result;
      landing.results.push_back({slot, result, copied});
    });
  }
  d.in_flight.push_back(std::move(landing));
  if (d.launches > kLag) d.land_through(d.launches - kLag);
  return kSuccess;
}

CUresult cuMemAlloc_v2(std::uint64_t* address, std::size_t bytes) {
  auto held = counted("cuMemAlloc_v2");
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory == nullptr) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  *address = reinterpret_cast<std::uintptr_t>(memory);
  return kSuccess;
}

CUresult cuMemsetD32_v2(std::uint64_t address, unsigned value, std::size_t count) {
  auto held = counted("cuMemsetD32_v2");
  std::fill_n(reinterpret_cast<unsigned*>(address), count, value);  // NOLINT(performance-no-int-to-ptr)
  return kSuccess;
}

CUresult cuMemHostAlloc(void** memory, std::size_t bytes, unsigned /*flags*/) {
  auto held = counted("cuMemHostAlloc");
  *memory = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *memory != nullptr ? kSuccess : 2;
}

CUresult cuMemHostGetDevicePointer_v2(std::uint64_t* address, void* memory, unsigned /*flags*/) {
  auto held = counted("cuMemHostGetDevicePointer_v2");
  *address = reinterpret_cast<std::uintptr_t>(memory);  // the device's memory is the host's
  return kSuccess;
}

CUresult cuEventCreate(void** event, unsigned /*flags*/) {
  auto held = counted("cuEventCreate");
  *event = new Event;
  return kSuccess;
}

CUresult cuEventRecord(void* event, void* /*stream*/) {
  auto held = counted("cuEventRecord");
  static_cast<Event*>(event)->launch = device().launches;
  return kSuccess;
}

CUresult cuEventQuery(void* event) {
  auto held = counted("cuEventQuery");
  auto& d = device();
  const auto launch = static_cast<Event*>(event)->launch;
  if (d.launches - launch < kLag) return kNotReady;
  d.land_through(launch);
  return d.outcome();
}

CUresult cuEventSynchronize(void* event) {
  auto held = counted("cuEventSynchronize");
  auto& d = device();
  d.land_through(static_cast<Event*>(event)->launch);
  return d.outcome();
}

CUresult cuStreamIsCapturing(void* /*stream*/, int* status) {
  auto held = counted("cuStreamIsCapturing");
  *status = 0;
  return device().faulted ? kIllegalAddress : kSuccess;  // a failed context says so to every stream call
}

CUresult cuStreamCreate(void** stream, unsigned /*flags*/) {
  auto held = counted("cuStreamCreate");
  *stream = &stream_object;
  return kSuccess;
}

CUresult cuStreamSynchronize(void* /*stream*/) {
  auto held = counted("cuStreamSynchronize");
  auto& d = device();
  d.land_through(d.launches);
  return d.outcome();
}

/// Each question lets the oldest launch in flight finish: the device makes progress while the
/// host asks, and work that is all done answers as it ended.
CUresult cuStreamQuery(void* /*stream*/) {
  auto held = counted("cuStreamQuery");
  auto& d = device();
  if (d.in_flight.empty()) return d.outcome();
  d.land_through(d.in_flight.front().launch);
  return d.in_flight.empty() ? d.outcome() : kNotReady;
}

CUresult cuMemcpyDtoHAsync_v2(void* to, std::uint64_t from, std::size_t bytes, void* /*stream*/) {
  auto held = counted("cuMemcpyDtoHAsync_v2");
  std::memcpy(to, reinterpret_cast<const void*>(from), bytes);  // NOLINT(performance-no-int-to-ptr)
  return kSuccess;
}

CUresult cuThreadExchangeStreamCaptureMode(int* mode) {
  auto held = counted("cuThreadExchangeStreamCaptureMode");
  std::swap(*mode, capture_mode);
  return kSuccess;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  auto held = counted("cuGetErrorString");
  *text = error == kIllegalAddress ? "an illegal memory access was encountered (fake device)" : "fake device error";
  return kSuccess;
}

}  // extern "C"
