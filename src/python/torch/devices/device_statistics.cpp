#include "torch/devices/device_statistics.hpp"

#include <chrono>

#include "device/engine/device_engines.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "recording/device_reads.hpp"
#include "torch/tensors/dense_view.hpp"
#include "torch/torch_device_module.hpp"

namespace ophook::py::device_statistics {
namespace {

namespace k = device::statistics_kernel;

device::DeviceEngine* engine_for(bool fake, int ordinal, std::uint32_t& device) {
  const auto* recorder = core::Recorder::get();
  const core::TestSettings test = recorder != nullptr ? recorder->config().test : core::TestSettings{};
  return device::engine_for({fake, ordinal, test, nvrtc_libraries}, device);
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
  job.blocks = device::blocks_for(job.groups);
  return true;
}

}  // namespace

device::Queued queue(const DLTensor& view, std::uint32_t kind, bool fake, const device::CopyRequest& copy,
                     device::Slot& slot) {
  using device::Queued;
  if (kind == k::kNone) return Queued::Elsewhere;
  std::uint32_t device = 0;
  auto* engine = engine_for(fake, view.device.device_id, device);
  if (engine == nullptr) return Queued::Elsewhere;
  void* stream = nullptr;
  if (!fake && !current_work_stream(engine->backend().dlpack_device_type(), view.device.device_id, stream)) {
    return Queued::Elsewhere;
  }
  if (device::capturing(device, stream, program_moments)) return Queued::Capturing;
  k::TensorJob job;
  if (!describe(view, kind, job)) return Queued::Elsewhere;
  engine->make_room(stream);
  device::Slot taken;
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
  auto* engine = engine_for(fake, view.device.device_id, device);
  const auto staging = engine != nullptr ? engine->staging() : nullptr;
  if (!staging) return false;
  const auto start = std::chrono::steady_clock::now();
  bool room = false;
  Py_BEGIN_ALLOW_THREADS room = staging->wait_for_room(bytes, more_coming);
  Py_END_ALLOW_THREADS
  auto& costs = device::costs();
  ++costs.staging_waits;
  costs.staging_wait_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  return room;
}

bool may_poll() {
  for (std::uint32_t device = 1; device < device::engine_count(); ++device) {
    auto* engine = device::engine_at(device);
    if (engine == nullptr) continue;
    void* stream = nullptr;
    const int ordinal = static_cast<int>(device) - 1;
    if (!current_work_stream(engine->backend().dlpack_device_type(), ordinal, stream) ||
        device::capturing(device, stream, program_moments)) {
      return false;
    }
  }
  return true;
}

bool ready(device::Slot slot) {
  auto& engine = *device::engine_at(slot.device);
  return (engine.answers_unasked(slot.index) || may_poll()) && engine.ready(slot.index);
}

}  // namespace ophook::py::device_statistics
