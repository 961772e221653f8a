// When one device's statistics engine (src/python/torch/cuda/device_engine.cpp) waits for the
// GPU: on a backend whose launches never finish until waited for, as behind a GPU the program
// runs far ahead of. A launch whose partials would overwrite those of one still running on its
// own stream is ordered after it by the stream and must not wait; one on another stream must. The
// ring's bytes are another matter: they are overwritten only once their launch has finished, on
// any stream, so that a culprit is judged before its bytes go.
#include "torch/cuda/device_engine.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "torch/cuda/backend.hpp"

namespace ophook::py::device_statistics {
namespace {

namespace k = statistics_kernel;

/// Launches that run nowhere and never finish on their own; the ring's "device memory" is a host
/// buffer. Counts the waits.
class BehindBackend final : public Backend {
 public:
  BehindBackend() : results_(kSlots) {}
  const k::Result* results() const override { return results_.data(); }
  const std::byte* staging(std::uint64_t& /*device_address*/) override { return nullptr; }
  std::uint64_t ring_memory(std::uint64_t bytes, std::string& /*why*/) override {
    ring_.resize(bytes);
    return reinterpret_cast<std::uintptr_t>(ring_.data());
  }
  bool copy_to_host(std::byte* /*to*/, std::uint64_t /*from*/, std::size_t /*n*/) noexcept override { return false; }
  bool launch(Kernel /*kernel*/, k::LaunchParams& /*params*/, std::uint32_t /*blocks*/, void* /*stream*/,
              std::string& /*why*/) override {
    return true;
  }
  Event record(void* /*stream*/) override { return &events_.emplace_back(); }
  bool finished(Event event) override { return *static_cast<bool*>(event); }
  void wait(Event event) override {
    *static_cast<bool*>(event) = true;
    ++waits;
  }
  void recycle(Event /*event*/) override {}
  bool capturing(void* /*stream*/) override { return false; }
  int dlpack_device_type() const override { return 2; }
  int waits = 0;

 private:
  std::vector<k::Result> results_;
  std::vector<std::byte> ring_;
  std::deque<bool> events_;  // a deque keeps their addresses
};

class DeviceEngineTest : public ::testing::Test {
 protected:
  DeviceEngineTest() {
    auto owned = std::make_unique<BehindBackend>();
    backend = owned.get();
    engine = std::make_unique<DeviceEngine>(std::move(owned));
  }

  /// One call's launch on `stream`: kJobsPerLaunch float32 tensors of `elements` each, their
  /// bytes copied as `copy` asks. Results never taken, so every launch stays in flight.
  void call(void* stream, std::uint64_t elements, const CopyRequest& copy = {}) {
    for (std::uint32_t j = 0; j < k::kJobsPerLaunch; ++j) {
      k::TensorJob job;
      job.kind = k::kFloat32;
      job.ndim = 1;
      job.sizes[0] = static_cast<std::int64_t>(elements);
      job.strides[0] = 1;
      job.count = elements;
      job.data = 4096;
      k::set_grouping(job, true);
      job.blocks = blocks_for(job.groups);
      engine->make_room(stream);
      Slot slot;
      ASSERT_TRUE(engine->take_slot(job, copy, stream, slot));
      engine->add(job, stream);
    }
    engine->launch();
  }

  BehindBackend* backend = nullptr;
  std::unique_ptr<DeviceEngine> engine;
  int stream_a = 0, stream_b = 0;
};

constexpr std::uint64_t kLarge = std::uint64_t{1} << 24;  // kMaxBlocksPerJob blocks each

TEST_F(DeviceEngineTest, LaunchesOnOneStreamNeverWaitForTheArena) {
  ASSERT_EQ(blocks_for(kLarge / 4), k::kMaxBlocksPerJob);
  const int launches = 4 * kArenaPartials / (k::kJobsPerLaunch * k::kMaxBlocksPerJob);  // round it four times
  for (int i = 0; i < launches; ++i) call(&stream_a, kLarge);
  EXPECT_EQ(backend->waits, 0);
}

TEST_F(DeviceEngineTest, ALaunchOnAnotherStreamWaitsWhereTheArenaComesRoundToIt) {
  const int launches = 4 * kArenaPartials / (k::kJobsPerLaunch * k::kMaxBlocksPerJob);
  for (int i = 0; i < launches; ++i) call(i % 2 == 0 ? static_cast<void*>(&stream_a) : &stream_b, kLarge);
  EXPECT_GT(backend->waits, launches / 2);
}

TEST_F(DeviceEngineTest, TheRingsBytesAreOverwrittenOnlyOnceTheirLaunchHasFinished) {
  CopyRequest ring;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  const std::uint64_t elements = 8192;  // 32 KiB a tensor, 384 KiB a launch: 2.7 launches fill the ring
  for (int i = 0; i < 2; ++i) call(&stream_a, elements, ring);
  EXPECT_EQ(backend->waits, 0);
  call(&stream_a, elements, ring);  // over the first launch's bytes, on its stream
  EXPECT_EQ(backend->waits, 1);
}

}  // namespace
}  // namespace ophook::py::device_statistics
