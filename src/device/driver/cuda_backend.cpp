#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device/driver/backend.hpp"
#include "device/driver/cuda_driver.hpp"
#include "device/driver/nvrtc_compiler.hpp"
#include "device/kernel/kernel_source.hpp"

namespace ophook::device {
namespace {

namespace k = statistics_kernel;

/// The kernel image for a compute capability, had once per process and architecture (from the
/// kernel cache or compiled); `recompile`: compiled afresh in place of one the driver refused.
const CompiledKernel* kernel_for(int major, int minor, const std::vector<std::string>& nvrtc_libraries,
                                 std::string& why, bool recompile = false) {
  static std::map<int, std::optional<CompiledKernel>> images;
  static std::map<int, std::string> failures;
  const int key = major * 10 + minor;
  auto [it, fresh] = images.try_emplace(key);
  if (fresh || recompile) {
    it->second = compile_statistics_kernel(major, minor, nvrtc_libraries, failures[key], !recompile);
  }
  if (!it->second) why = failures[key];
  return it->second ? &*it->second : nullptr;
}

class CudaBackend final : public Backend {
 public:
  bool open(int ordinal, const std::vector<std::string>& nvrtc_libraries, std::string& why) {
    api_ = driver(why);
    if (api_ == nullptr) return false;
    CUdevice device = 0;
    int major = 0, minor = 0;
    if (!check(api_->device_get(&device, ordinal), "cuDeviceGet", why) ||
        !check(api_->device_get_attribute(&major, kComputeCapabilityMajor, device), "cuDeviceGetAttribute", why) ||
        !check(api_->device_get_attribute(&minor, kComputeCapabilityMinor, device), "cuDeviceGetAttribute", why) ||
        !check(api_->primary_context_retain(&context_, device), "cuDevicePrimaryCtxRetain", why)) {
      return false;
    }
    const CompiledKernel* image = kernel_for(major, minor, nvrtc_libraries, why);
    if (image == nullptr) return false;
    ContextScope scope(*api_, context_);
    CUmodule module = nullptr;
    if (image->from_cache && api_->module_load_data(&module, image->image.data()) != kSuccess) {
      module = nullptr;
      image = kernel_for(major, minor, nvrtc_libraries, why, true);  // a damaged cached image
      if (image == nullptr) return false;
    }
    void* host = nullptr;
    return (module != nullptr ||
            check(api_->module_load_data(&module, image->image.data()), "cuModuleLoadData (" + image->target + ")", why)) &&
           check(api_->module_get_function(&statistics_, module, kStatisticsKernelName), "cuModuleGetFunction", why) &&
           check(api_->module_get_function(&copy_changed_, module, kCopyChangedKernelName), "cuModuleGetFunction", why) &&
           check(api_->mem_alloc(&partials_, sizeof(k::Partial) * kArenaPartials), "cuMemAlloc", why) &&
           check(api_->mem_alloc(&arrivals_, sizeof(std::uint32_t) * kSlots), "cuMemAlloc", why) &&
           check(api_->memset_d32(arrivals_, 0, kSlots), "cuMemsetD32", why) &&
           check(api_->mem_alloc(&gate_, kGateBytes), "cuMemAlloc", why) &&
           check(api_->memset_d32(gate_, 0, kGateBytes / 4), "cuMemsetD32", why) &&
           check(api_->host_alloc(&host, kHostBytes, kHostAllocPortable | kHostAllocDeviceMap), "cuMemHostAlloc", why) &&
           (results_ = static_cast<k::Result*>(std::memset(host, 0, kHostBytes)),
            stamps_ = reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(host) + kResultBytes),
            ring_copies_ = reinterpret_cast<std::uint32_t*>(stamps_ + kSlots),
            check(api_->host_get_device_pointer(&results_on_device_, host, 0), "cuMemHostGetDevicePointer", why));
  }

  const k::Result* results() const override { return results_; }
  const std::uint32_t* ring_copies() const override { return ring_copies_; }

  const std::byte* staging(std::uint64_t bytes, std::uint64_t& device_address) override {
    if (staging_ == nullptr && !staging_failed_) {
      ContextScope scope(*api_, context_);
      void* host = nullptr;
      staging_failed_ = api_->host_alloc(&host, bytes, kHostAllocPortable | kHostAllocDeviceMap) != kSuccess ||
                        api_->host_get_device_pointer(&staging_on_device_, host, 0) != kSuccess;
      if (!staging_failed_) staging_ = static_cast<const std::byte*>(host);
    }
    device_address = staging_on_device_;
    return staging_;
  }

  std::uint64_t ring_memory(std::uint64_t bytes, std::string& why) override {
    if (ring_ == 0 && ring_why_.empty()) {
      ContextScope scope(*api_, context_);
      RelaxedCapture relaxed(*api_);  // another thread's capture neither refuses nor loses it
      (void)check(api_->mem_alloc(&ring_, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes", ring_why_);
    }
    why = ring_why_;
    return ring_;
  }

  bool copy_to_host(std::byte* to, std::uint64_t from, std::size_t n) noexcept override {
    ContextScope scope(*api_, context_);
    RelaxedCapture relaxed(*api_);  // allowed while another thread captures a CUDA graph
    if (copy_stream_ == nullptr && api_->stream_create(&copy_stream_, kStreamNonBlocking) != kSuccess) {
      copy_stream_ = nullptr;
    }
    return copy_stream_ != nullptr && api_->memcpy_dtoh_async(to, from, n, copy_stream_) == kSuccess &&
           api_->stream_synchronize(copy_stream_) == kSuccess;
  }

  bool launch(Kernel kernel, k::LaunchParams& params, std::uint32_t blocks, void* stream, std::string& why) override {
    params.partials = partials_, params.arrivals = arrivals_, params.results = results_on_device_;
    params.stamps = results_on_device_ + kResultBytes;
    params.copies = params.stamps + sizeof(std::uint64_t) * kSlots;
    params.gate = gate_, params.verdicts = gate_ + sizeof(std::uint64_t);
    void* arguments[] = {&params};
    ContextScope scope(*api_, context_);
    return check(api_->launch_kernel(kernel == Kernel::Statistics ? statistics_ : copy_changed_, blocks, 1, 1, k::kThreads, 1, 1, 0, static_cast<CUstream>(stream),
                                     arguments, nullptr),
                 "cuLaunchKernel", why);
  }

  bool arrived(std::uint32_t slot, std::uint64_t stamp) override {
    // Acquire: the result, written before its stamp, is read after it.
    return std::atomic_ref<std::uint64_t>(stamps_[slot]).load(std::memory_order_acquire) == stamp;
  }

  bool wait_until(const std::function<bool()>& landed, void* stream) override {
    for (std::uint32_t spins = 1;; ++spins) {
      if (landed()) return true;
      // Now and then the stream is asked whether its work failed or is all done (the stamps would
      // be there then), unless it is capturing a CUDA graph: asking would invalidate the capture,
      // and the work launched before the capture finishes on its own. A context that failed
      // (a fault) says so to the capture question already: its stamps never come.
      if (spins % kSpinsPerQuery == 0) {
        ContextScope scope(*api_, context_);
        int status = 0;
        const CUresult asked = api_->stream_is_capturing(static_cast<CUstream>(stream), &status);
        if (asked == kSuccess && status == 0) {
          if (api_->stream_query(static_cast<CUstream>(stream)) != kNotReady) return landed();
        } else if (asked != kSuccess && (asked < kFirstCaptureError || asked > kLastCaptureError)) {
          return landed();
        }
      }
      if (spins < kSpinsBeforeSleeping) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

  Event record(void* stream) override {
    ContextScope scope(*api_, context_);
    CUevent event = nullptr;
    if (!free_.empty()) {
      event = free_.back();
      free_.pop_back();
    } else if (api_->event_create(&event, kEventDisableTiming) != kSuccess) {
      return nullptr;
    }
    if (api_->event_record(event, static_cast<CUstream>(stream)) == kSuccess) return event;
    free_.push_back(event);
    return nullptr;
  }

  bool finished(Event event) override { return api_->event_query(static_cast<CUevent>(event)) != kNotReady; }
  void wait(Event event) override { api_->event_synchronize(static_cast<CUevent>(event)); }
  void recycle(Event event) override { free_.push_back(static_cast<CUevent>(event)); }

  bool capturing(void* stream) override {
    ContextScope scope(*api_, context_);  // the legacy stream is the current context's: a thread torch
                                          // has not used the device on yet has none
    int status = 0;
    // An error (the legacy stream while another captures globally) counts as capturing: no launch.
    return api_->stream_is_capturing(static_cast<CUstream>(stream), &status) != kSuccess || status != 0;
  }

  int dlpack_device_type() const override { return 2; }  // kDLCUDA

 private:
  bool check(CUresult result, const std::string& what, std::string& why) const {
    if (result == kSuccess) return true;
    why = what + " failed: " + describe(*api_, result);
    return false;
  }

  // Host memory: the results, then the stamps, then what became of the ring's copies.
  static constexpr std::size_t kResultBytes = sizeof(k::Result) * kSlots;
  static constexpr std::size_t kHostBytes = kResultBytes + (sizeof(std::uint64_t) + sizeof(std::uint32_t)) * kSlots;
  // Device memory: the ring's gate, then the launches' verdicts and inputs' verdicts (LaunchParams).
  static constexpr std::size_t kGateBytes = sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t) * k::kVerdictSlots;
  // A wait spins (yielding) for about a millisecond, then sleeps between looks.
  static constexpr std::uint32_t kSpinsPerQuery = 64, kSpinsBeforeSleeping = 4096;

  const Driver* api_ = nullptr;
  CUcontext context_ = nullptr;
  CUfunction statistics_ = nullptr, copy_changed_ = nullptr;
  CUdeviceptr partials_ = 0, arrivals_ = 0, results_on_device_ = 0;
  k::Result* results_ = nullptr;
  std::uint64_t* stamps_ = nullptr;  // by slot, after the results
  std::uint32_t* ring_copies_ = nullptr;  // by slot, after the stamps
  CUdeviceptr gate_ = 0;
  const std::byte* staging_ = nullptr;
  CUdeviceptr staging_on_device_ = 0;
  bool staging_failed_ = false;
  CUdeviceptr ring_ = 0;
  std::string ring_why_;  // why the ring's memory could not be had
  CUstream copy_stream_ = nullptr;  // the ring's copies to the host
  std::vector<CUevent> free_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int ordinal, const std::vector<std::string>& nvrtc_libraries, std::string& why) {
  auto backend = std::make_unique<CudaBackend>();
  if (!backend->open(ordinal, nvrtc_libraries, why)) return nullptr;
  return backend;
}

}  // namespace ophook::device
