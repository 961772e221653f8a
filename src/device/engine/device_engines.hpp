#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device/engine/device_engine.hpp"
#include "device/engine/device_requests.hpp"
#include "ophook/config/config.hpp"

/// The devices' statistics engines, one per device, made when a device's first tensor is met:
/// index 0 is the fake device (OPHOOK_TENSOR_COPY=fake-device), 1 + ordinal a CUDA device. A
/// Slot names its engine by that index. Not thread-safe: the caller serialises every call (the
/// extension holds the GIL), which also guards the state kept here.
namespace ophook::device {

/// How an engine is made for a device not met before.
struct EngineSource {
  bool fake = false;
  int ordinal = 0;
  core::TestSettings test;  // the fake device's, and the staging memory's size
  std::function<std::vector<std::string>()> nvrtc_libraries;  // asked only when a CUDA backend is made
};

/// The engine for `source` (made, or found wanting, once: nullptr where there is none, said once
/// on stderr and in costs().unavailable); `device` is set to its index.
DeviceEngine* engine_for(const EngineSource& source, std::uint32_t& device);

/// The engines made so far (null entries where a device has none), by index.
std::uint32_t engine_count();
DeviceEngine* engine_at(std::uint32_t device);

/// Whether `stream` of `device` is capturing a CUDA graph, asked of its backend at most once per
/// `moment` (the caller's count of the moments the program may have run) and stream.
bool capturing(std::uint32_t device, void* stream, std::uint64_t moment);

/// The engine of `slot` (queued with a ring ticket)'s ring: for the record's array.
core::DeviceHeldBytes* ring_of(Slot slot);

/// Whether the ring's room `slot`'s ticket names holds the bytes `slot`'s read found
/// (DeviceEngine::holds_its_ring_bytes). Asked once its result is in, before take().
bool holds_its_ring_bytes(Slot slot);

/// `slot`'s bytes are not copied into its device's ring after all, where its launch has not been
/// sent yet (DeviceEngine::withdraw_ring_copy): its call is larger than OPHOOK_RING_BYTES.
void withdraw_ring_copy(Slot slot);

/// The first NaN's culprit is judged and its trigger is about to write the ring: what each
/// device's ring kept is settled first (DeviceEngine::settle_ring).
void settle_ring();

/// Launches what is queued, one launch per device (per 12 tensors): after a call's tensors are
/// queued.
void launch_queued();

/// Waits for the result of `slot`, counted as a synchronisation in costs().
void wait(Slot slot);

/// The result of `slot`, which must be ready or waited for; nullopt when its launch failed. A
/// copied tensor's bytes go to `consume_bytes` first. The slot is free afterwards.
std::optional<statistics_kernel::Result> take(Slot slot, const ConsumeBytes& consume_bytes = {});

/// Frees `slot` without its result (a record that goes back unwritten), once its launch is done.
void abandon(Slot slot);

/// What the engines cost and why a device has none, for summary.json.
Costs& costs();

/// In a forked child, which cannot use its parent's CUDA contexts: the engines are forgotten
/// (leaked, not destroyed: freeing their device memory there would fail), and made afresh if the
/// child meets a tensor. For the fork handlers' list (core::ForkStage::DeviceEngines).
void forget_engines() noexcept;

}  // namespace ophook::device
