#include "torch/cuda/statistics_engine.hpp"

#include <pthread.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/log.hpp"
#include "torch/cuda/backend.hpp"
#include "torch/cuda/device_engine.hpp"
#include "torch/dense_view.hpp"
#include "torch/device_path.hpp"

namespace ophook::py::device_statistics {
namespace {

/// Engines by device: index 0 the fake device, 1 + ordinal the CUDA devices; null where there is
/// none (tried once).
std::vector<std::unique_ptr<DeviceEngine>> engines;
std::vector<bool> tried;

/// By device: the stream last found not capturing a CUDA graph, and at which program moment.
struct NotCapturing {
  std::uint64_t moment = ~std::uint64_t{0};
  void* stream = nullptr;
};
std::vector<NotCapturing> not_capturing;

// A forked child cannot use its parent's CUDA context: it forgets the engines (leaked, not
// destroyed: freeing their device memory there would fail) and starts afresh if it meets a tensor.
const bool fork_handler_registered = [] {
  pthread_atfork(nullptr, nullptr, [] {
    for (auto& engine : engines) (void)engine.release();
    engines.clear();
    tried.clear();
    not_capturing.clear();
  });
  return true;
}();

/// Whether `stream` of `device` is capturing a CUDA graph: asked of its backend once per program
/// moment (program_may_have_run).
bool capturing(std::uint32_t device, void* stream) {
  if (device >= not_capturing.size()) not_capturing.resize(device + 1);
  auto& known = not_capturing[device];
  if (known.moment == program_moments && known.stream == stream) return false;
  if (engines[device]->backend().capturing(stream)) return true;
  known = {program_moments, stream};
  return false;
}

/// For tests and benchmarks: the fake device's tensors go through the CUDA backend instead, to the
/// libcuda.so.1 first on LD_LIBRARY_PATH (tests/fake_cuda's, which runs the kernel's arithmetic on
/// the host and counts the driver calls).
bool fake_device_through_driver() {
  static const bool through = [] {
    const char* value = std::getenv("OPHOOK_TEST_FAKE_DEVICE_DRIVER");
    return value != nullptr && std::string_view(value) == "1";
  }();
  return through;
}

DeviceEngine* engine_for(bool fake, int ordinal, std::uint32_t& device) {
  device = fake ? 0 : 1 + static_cast<std::uint32_t>(ordinal);
  if (device >= engines.size()) engines.resize(device + 1), tried.resize(device + 1);
  if (tried[device]) return engines[device].get();
  tried[device] = true;
  std::string why;
  const bool driver = !fake || fake_device_through_driver();
  auto backend = driver ? make_cuda_backend(fake ? 0 : ordinal, nvrtc_libraries(), why) : make_fake_backend();
  const std::string name = fake ? std::string(driver ? "fake (CUDA driver)" : "fake") : "cuda:" + std::to_string(ordinal);
  if (!backend) {
    engine_costs.unavailable = name + ": " + why;
    core::log_warn("statistics of tensors on {} are computed through torch, not by ophook's kernel: {}", name, why);
    return nullptr;
  }
  engine_costs.devices += (engine_costs.devices.empty() ? "" : ", ") + name;
  engines[device] = std::make_unique<DeviceEngine>(std::move(backend));
  return engines[device].get();
}

/// The kernel's description of `view`; false when it takes no such tensor.
bool describe(const DLTensor& view, std::uint32_t kind, k::TensorJob& job) {
  if (view.ndim < 0 || static_cast<std::uint32_t>(view.ndim) > k::kMaxDims) return false;
  job.kind = kind;
  job.ndim = static_cast<std::uint32_t>(view.ndim);
  job.data = reinterpret_cast<std::uintptr_t>(view.data) + view.byte_offset;
  job.count = 1;
  bool contiguous = true;
  std::int64_t expected = 1;
  for (std::uint32_t d = job.ndim; d-- > 0;) {
    job.sizes[d] = view.shape[d];
    job.strides[d] = view.strides != nullptr ? view.strides[d] : expected;
    if (job.sizes[d] != 1 && job.strides[d] != expected) contiguous = false;
    expected *= view.shape[d];
    job.count *= static_cast<std::uint64_t>(view.shape[d]);
  }
  k::set_grouping(job, contiguous);
  k::order_by_memory(job);
  job.blocks = blocks_for(job.groups);
  return true;
}

}  // namespace

Queued queue(const DLTensor& view, std::uint32_t kind, bool fake, const CopyRequest& copy, Slot& slot) {
  if (kind == k::kNone) return Queued::Elsewhere;
  std::uint32_t device = 0;
  DeviceEngine* engine = engine_for(fake, view.device.device_id, device);
  if (engine == nullptr) return Queued::Elsewhere;
  void* stream = nullptr;
  if (!fake && !current_work_stream(engine->backend().dlpack_device_type(), view.device.device_id, stream)) {
    return Queued::Elsewhere;
  }
  if (capturing(device, stream)) return Queued::Capturing;
  k::TensorJob job;
  if (!describe(view, kind, job)) return Queued::Elsewhere;
  engine->make_room(stream);
  Slot taken;
  if (engine->share(job, copy, taken)) {
    slot = {device, taken.index, taken.ring_ticket, copy.check_only, taken.ring_refused};
    return Queued::Yes;
  }
  Queued refused = Queued::Elsewhere;
  if (!engine->take_slot(job, copy, stream, taken, refused)) return refused;
  engine->add(job, stream);
  slot = {device, job.slot, taken.ring_ticket, copy.check_only, taken.ring_refused};
  return Queued::Yes;
}

bool wait_for_staging(const DLTensor& view, bool fake, std::uint64_t bytes, const std::function<bool()>& more_coming) {
  std::uint32_t device = 0;
  DeviceEngine* engine = engine_for(fake, view.device.device_id, device);
  const std::shared_ptr<StagingMemory> staging = engine != nullptr ? engine->staging() : nullptr;
  if (!staging) return false;
  const auto start = std::chrono::steady_clock::now();
  bool room = false;
  Py_BEGIN_ALLOW_THREADS room = staging->wait_for_room(bytes, more_coming);
  Py_END_ALLOW_THREADS
  ++engine_costs.staging_waits;
  engine_costs.staging_wait_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  return room;
}

core::DeviceHeldBytes* ring_of(Slot slot) { return engines[slot.device]->ring(slot.check_ring); }

bool holds_its_ring_bytes(Slot slot) { return engines[slot.device]->holds_its_ring_bytes(slot.index); }

void withdraw_ring_copy(Slot slot) { engines[slot.device]->withdraw_ring_copy(slot.index); }

void settle_ring() {
  for (auto& engine : engines) {
    if (engine) engine->settle_ring();
  }
}

void launch_queued() {
  for (auto& engine : engines) {
    if (engine) engine->launch();
  }
}

bool may_poll() {
  for (std::uint32_t device = 1; device < engines.size(); ++device) {
    void* stream = nullptr;
    if (!engines[device]) continue;
    const int ordinal = static_cast<int>(device) - 1;
    if (!current_work_stream(engines[device]->backend().dlpack_device_type(), ordinal, stream) ||
        capturing(device, stream)) {
      return false;
    }
  }
  return true;
}

bool ready(Slot slot) {
  auto& engine = *engines[slot.device];
  return (engine.answers_unasked(slot.index) || may_poll()) && engine.ready(slot.index);
}
void wait(Slot slot) { engines[slot.device]->wait(slot.index); }
std::optional<statistics_kernel::Result> take(Slot slot, const ConsumeBytes& consume_bytes) {
  return engines[slot.device]->take(slot.index, consume_bytes);
}
void abandon(Slot slot) { engines[slot.device]->abandon(slot.index); }
const Costs& costs() { return engine_costs; }

}  // namespace ophook::py::device_statistics
