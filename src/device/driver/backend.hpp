#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/kernel/statistics_kernel.hpp"

/// Where the statistics kernel runs: a CUDA device through the driver API, or the fake device
/// (OPHOOK_TENSOR_COPY=fake-device), which runs the same arithmetic on the host and lets its
/// launches finish late, so that the asynchronous completion is tested on machines without a GPU.
namespace ophook::device {

inline constexpr std::uint32_t kSlots = 8192;           // results (and arrival counters) in flight
inline constexpr std::uint32_t kArenaPartials = 1 << 16;  // per-block partials of launches in flight
// Each launch in flight holds a result slot: no two of them share a verdict.
static_assert(statistics_kernel::kVerdictSlots >= kSlots);

class Backend {
 public:
  using Event = void*;
  virtual ~Backend() = default;
  /// The results, where the host reads them (kSlots of them).
  virtual const statistics_kernel::Result* results() const = 0;
  /// What became of each slot's copy into the device's ring (statistics_kernel::RingCopy), beside
  /// its result: valid where the slot's job copied into the ring and its result is in.
  virtual const std::uint32_t* ring_copies() const = 0;
  /// `bytes` of host memory the device writes `dump`'s bytes into (StagingMemory), allocated at the
  /// first call; null when it cannot be had. `device_address` is where the kernel writes it.
  virtual const std::byte* staging(std::uint64_t bytes, std::uint64_t& device_address) = 0;
  /// `bytes` of device memory for OPHOOK_RING_BYTES' ring (DeviceRing), allocated once; 0 with
  /// `why` when they cannot be had.
  virtual std::uint64_t ring_memory(std::uint64_t bytes, std::string& why) = 0;
  /// Copies `n` bytes at device address `from` into host memory `to` and waits for them, on a
  /// stream of its own that neither waits for the program's streams nor disturbs a CUDA graph
  /// being captured. Any thread, while the program's thread goes on (DeviceRing serialises the calls). False when the
  /// copy failed.
  virtual bool copy_to_host(std::byte* to, std::uint64_t from, std::size_t n) noexcept = 0;
  /// The kernel's two entry points (statistics_kernel.cu).
  enum class Kernel : std::uint8_t {
    Statistics,   // ophook_statistics: every job's Result (and copies, but of kCopyIfChanged jobs)
    CopyChanged,  // ophook_copy_changed: after it on the same stream, its kCopyIfChanged jobs' copies
  };
  /// Launches `blocks` blocks of `kernel` over `params` (its addresses are filled in here) on
  /// `stream`. False with `why` when the launch failed.
  virtual bool launch(Kernel kernel, statistics_kernel::LaunchParams& params, std::uint32_t blocks, void* stream,
                      std::string& why) = 0;
  /// Whether the result of `slot` that the launch stamped `stamp` (LaunchParams::stamp) writes
  /// has landed in results(): its stamp is there. No driver call, so it may be asked while a CUDA
  /// graph is being captured.
  virtual bool arrived(std::uint32_t slot, std::uint64_t stamp) = 0;
  /// Waits until `landed()` (the stamps of a launch on `stream`): true then; false when the
  /// stream's work failed or finished without them (the launch failed).
  virtual bool wait_until(const std::function<bool()>& landed, void* stream) = 0;
  /// An event recorded on `stream` after the launches so far; null when none could be recorded
  /// (the caller then waits at once). Only launches that copy bytes to the host need one: those
  /// bytes are known to be there when the launch has finished, not when its results have landed.
  virtual Event record(void* stream) = 0;
  /// Whether the work before `event` has finished (no waiting).
  virtual bool finished(Event event) = 0;
  /// Waits until it has.
  virtual void wait(Event event) = 0;
  /// The event may be recorded again.
  virtual void recycle(Event event) = 0;
  /// Whether `stream` is capturing a CUDA graph now: nothing may be launched on it.
  virtual bool capturing(void* stream) = 0;
  /// Where the current stream comes from: the device's (DLPack type, ordinal).
  virtual int dlpack_device_type() const = 0;
};

/// The CUDA device `ordinal`: its primary context, the kernel compiled with NVRTC (found among
/// `nvrtc_libraries` or by name), its buffers. Null with `why` when any of it is missing.
std::unique_ptr<Backend> make_cuda_backend(int ordinal, const std::vector<std::string>& nvrtc_libraries, std::string& why);

/// The fake device: the kernel's arithmetic on the host, each launch's results landing `lag`
/// launches later (or when waited for); `idle`: none of a GPU's work at all, for the benchmarks of
/// the host's side (every element finite and zero, every fingerprint new).
std::unique_ptr<Backend> make_fake_backend(bool idle, std::uint64_t lag);

}  // namespace ophook::device
