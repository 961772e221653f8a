#include "device/engine/device_engines.hpp"

#include <memory>
#include <string>
#include <vector>

#include "device/driver/backend.hpp"
#include "ophook/log.hpp"

namespace ophook::device {
namespace {

std::vector<std::unique_ptr<DeviceEngine>> engines;
std::vector<bool> tried;

/// By device: the stream last found not capturing a CUDA graph, and at which program moment.
struct NotCapturing {
  std::uint64_t moment = ~std::uint64_t{0};
  void* stream = nullptr;
};
std::vector<NotCapturing> not_capturing;

}  // namespace

DeviceEngine* engine_for(const EngineSource& source, std::uint32_t& device) {
  device = source.fake ? 0 : 1 + static_cast<std::uint32_t>(source.ordinal);
  if (device >= engines.size()) engines.resize(device + 1), tried.resize(device + 1);
  if (tried[device]) return engines[device].get();
  tried[device] = true;
  std::string why;
  const bool driver = !source.fake || source.test.fake_device_driver;
  auto backend = driver ? make_cuda_backend(source.fake ? 0 : source.ordinal, source.nvrtc_libraries(), why)
                        : make_fake_backend(source.test.fake_device_idle, source.test.fake_device_lag);
  const std::string name = source.fake ? std::string(driver ? "fake (CUDA driver)" : "fake")
                                       : "cuda:" + std::to_string(source.ordinal);
  if (!backend) {
    engine_costs.unavailable = name + ": " + why;
    core::log_warn("statistics of tensors on {} are computed through torch, not by ophook's kernel: {}", name, why);
    return nullptr;
  }
  engine_costs.devices += (engine_costs.devices.empty() ? "" : ", ") + name;
  engines[device] = std::make_unique<DeviceEngine>(std::move(backend), source.test.staging_bytes);
  return engines[device].get();
}

std::uint32_t engine_count() { return static_cast<std::uint32_t>(engines.size()); }

DeviceEngine* engine_at(std::uint32_t device) { return device < engines.size() ? engines[device].get() : nullptr; }

bool capturing(std::uint32_t device, void* stream, std::uint64_t moment) {
  if (device >= not_capturing.size()) not_capturing.resize(device + 1);
  auto& known = not_capturing[device];
  if (known.moment == moment && known.stream == stream) return false;
  if (engines[device]->backend().capturing(stream)) return true;
  known = {moment, stream};
  return false;
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

void wait(Slot slot) { engines[slot.device]->wait(slot.index); }

std::optional<statistics_kernel::Result> take(Slot slot, const ConsumeBytes& consume_bytes) {
  return engines[slot.device]->take(slot.index, consume_bytes);
}

void abandon(Slot slot) { engines[slot.device]->abandon(slot.index); }

Costs& costs() { return engine_costs; }

void forget_engines() noexcept {
  for (auto& engine : engines) (void)engine.release();
  engines.clear();
  tried.clear();
  not_capturing.clear();
}

}  // namespace ophook::device
