// When one device's statistics engine (src/device/engine/device_engine.cpp) waits for the
// GPU: on a backend whose launches never finish until waited for, as behind a GPU the program
// runs far ahead of. A launch whose partials would overwrite those of one still running on its
// own stream is ordered after it by the stream and must not wait; one on another stream must. So
// with the ring's bytes: the device's gate keeps a culprit's, so a room over calls not yet judged
// waits for nothing on its own stream.
#include "device/engine/device_engine.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/driver/backend.hpp"

namespace ophook::device {
namespace {

namespace k = statistics_kernel;

/// Launches that run nowhere and never finish on their own (their stamps land, and their events
/// pass, only when waited for); the ring's "device memory" is a host buffer. Counts the waits, the
/// events recorded and asked about, and can fail the launches it waits for.
class BehindBackend final : public Backend {
 public:
  BehindBackend() : results_(kSlots), stamps_(kSlots) {}
  const k::Result* results() const override { return results_.data(); }
  const std::uint32_t* ring_copies() const override { return ring_copies_.data(); }
  const std::byte* staging(std::uint64_t bytes, std::uint64_t& device_address) override {
    if (!staging_) staging_ = std::make_unique_for_overwrite<std::byte[]>(bytes);  // never touched
    device_address = reinterpret_cast<std::uintptr_t>(staging_.get());
    return staging_.get();
  }
  std::uint64_t ring_memory(std::uint64_t bytes, std::string& /*why*/) override {
    ring_.resize(bytes);
    return reinterpret_cast<std::uintptr_t>(ring_.data());
  }
  bool copy_to_host(std::byte* /*to*/, std::uint64_t /*from*/, std::size_t /*n*/) noexcept override { return false; }
  bool launch(Kernel /*kernel*/, k::LaunchParams& params, std::uint32_t /*blocks*/, void* /*stream*/,
              std::string& /*why*/) override {
    for (std::uint32_t j = 0; j < params.jobs; ++j) in_flight_.emplace_back(params.job[j].slot, params.stamp);
    last_params = params;
    return true;
  }
  bool arrived(std::uint32_t slot, std::uint64_t stamp) override { return stamps_[slot] == stamp; }
  /// Lands the launches in flight, oldest first, until `landed` holds (a GPU running until then).
  bool wait_until(const std::function<bool()>& landed, void* /*stream*/) override {
    ++waits;
    std::size_t n = 0;
    while (!fail_waits && !landed() && n < in_flight_.size()) {
      const auto [slot, stamp] = in_flight_[n++];
      stamps_[slot] = stamp;
    }
    in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(n));
    return landed();
  }
  Event record(void* /*stream*/) override {
    ++events;
    return &events_.emplace_back();
  }
  bool finished(Event event) override {
    ++questions;
    return *static_cast<bool*>(event);
  }
  void wait(Event event) override {
    *static_cast<bool*>(event) = true;
    ++waits;
  }
  /// Lands every launch so far, as a GPU that has caught up.
  void catch_up() {
    for (const auto& [slot, stamp] : in_flight_) stamps_[slot] = stamp;
    in_flight_.clear();
  }
  /// Lands the result of `slot` alone: its job's last block has finished, others of its launch not.
  void land(std::uint32_t slot) {
    std::erase_if(in_flight_, [&](const auto& pending) {
      if (pending.first != slot) return false;
      stamps_[slot] = pending.second;
      return true;
    });
  }
  void recycle(Event /*event*/) override {}
  bool capturing(void* /*stream*/) override { return false; }
  int dlpack_device_type() const override { return 2; }
  /// Slot `slot`'s result, as its launch would write it.
  k::Result& result(std::uint32_t slot) { return results_[slot]; }
  int waits = 0, events = 0, questions = 0;
  k::LaunchParams last_params;
  bool fail_waits = false;  // a launch waited for fails on the device: its stamps never land

 private:
  std::vector<k::Result> results_;
  std::vector<std::uint32_t> ring_copies_ = std::vector<std::uint32_t>(kSlots, k::kCopiedAll);
  std::unique_ptr<std::byte[]> staging_;
  std::vector<std::uint64_t> stamps_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> in_flight_;  // (slot, stamp) not landed
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

  /// A float32 tensor of `elements` at `address`, `stride` apart, as device_statistics::queue()
  /// describes it.
  static k::TensorJob tensor(std::uint64_t elements, std::uint64_t address = 4096, std::int64_t stride = 1) {
    k::TensorJob job;
    job.kind = k::kFloat32;
    job.ndim = 1;
    job.sizes[0] = static_cast<std::int64_t>(elements);
    job.strides[0] = stride;
    job.count = elements;
    job.data = address;
    k::set_grouping(job, stride == 1);
    job.blocks = blocks_for(job.groups);
    return job;
  }

  /// Queues `job` as device_statistics::queue() does: answered by a read in the launch being
  /// assembled where one reads the same elements, else given a slot of its own.
  Slot queue(k::TensorJob job, void* stream, const CopyRequest& copy = {}) {
    engine->make_room(stream);
    Slot slot;
    if (engine->share(job, copy, slot)) return slot;
    Queued refused = Queued::Elsewhere;
    EXPECT_TRUE(engine->take_slot(job, copy, stream, slot, refused));
    slot.index = job.slot;
    engine->add(job, stream);
    return slot;
  }

  /// One call's launch on `stream`: kJobsPerLaunch float32 tensors of `elements` each (at
  /// different addresses), their bytes copied as `copy` asks. Results never taken, so every launch
  /// stays in flight.
  void call(void* stream, std::uint64_t elements, const CopyRequest& copy = {}) {
    for (std::uint32_t j = 0; j < k::kJobsPerLaunch; ++j) {
      queue(tensor(elements, 4096 + std::uint64_t{j} * 4 * elements), stream, copy);
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

TEST_F(DeviceEngineTest, TheRingsRoomsNeverWaitForCallsNotYetJudgedOnTheirStream) {
  CopyRequest ring;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  const std::uint64_t elements = 8192;  // 32 KiB a tensor, 384 KiB a launch: 2.7 launches fill the ring
  // Round the ring ten times, no result ever taken: the gate keeps what may be a culprit's.
  for (int i = 0; i < 30; ++i) call(&stream_a, elements, ring);
  EXPECT_EQ(backend->waits, 0);
  // Over bytes a launch on another stream may still be copying: that one finishes first.
  call(&stream_b, elements, ring);
  EXPECT_GT(backend->waits, 0);
}

TEST_F(DeviceEngineTest, ARingCopyIsGatedAndItsLaunchCountsTheJudgedJobs) {
  CopyRequest ring;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  ring.judged = k::kJudgedOutput;
  queue(tensor(1024), &stream_a, ring);
  ring.judged = 0;
  queue(tensor(1024, 1 << 20), &stream_a, ring);
  engine->launch();
  const auto& sent = backend->last_params;
  ASSERT_EQ(sent.jobs, 2u);
  EXPECT_EQ(sent.judged_jobs, 1u);
  EXPECT_TRUE(sent.job[0].flags & k::kRingCopy);
  EXPECT_TRUE(sent.job[0].flags & k::kJudgedOutput);
  EXPECT_FALSE(sent.job[1].flags & (k::kJudgedInput | k::kJudgedOutput));
  EXPECT_EQ(sent.open_through, 0u);  // no launch judged yet
  EXPECT_EQ(sent.prior_inputs, 0u);
}

TEST_F(DeviceEngineTest, TheLaunchAfterOneOfJudgedInputsAloneTakesTheirVerdict) {
  CopyRequest inputs, outputs;
  inputs.judged = k::kJudgedInput, outputs.judged = k::kJudgedOutput;
  queue(tensor(1024), &stream_a, inputs);  // read before a call that may write into it
  engine->launch();
  const auto before = backend->last_params.stamp;
  queue(tensor(1024), &stream_a, outputs);  // its output, read after
  engine->launch();
  EXPECT_EQ(backend->last_params.prior_inputs, before);
  queue(tensor(1024), &stream_a, inputs);
  queue(tensor(1024, 1 << 20), &stream_a, outputs);  // a call read after it ran, inputs and outputs
  engine->launch();
  EXPECT_EQ(backend->last_params.prior_inputs, 0u);
  queue(tensor(1024), &stream_a, inputs);
  engine->launch();
  queue(tensor(1024), &stream_b, outputs);  // not ordered after it: its inputs' verdict may not be there
  engine->launch();
  EXPECT_EQ(backend->last_params.prior_inputs, 0u);
}

TEST_F(DeviceEngineTest, ARingCopyWithdrawnBeforeItsLaunchIsNotMade) {
  CopyRequest ring;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  const auto before = engine_costs.ring_copies_withdrawn;
  const Slot shared = queue(tensor(1024), &stream_a, ring);
  const Slot withdrawn = queue(tensor(1024, 1 << 20), &stream_a, ring);
  queue(tensor(1024), &stream_a, ring);  // answered by the first's read
  ASSERT_NE(withdrawn.ring_ticket, 0U);
  engine->withdraw_ring_copy(withdrawn.index);
  engine->withdraw_ring_copy(shared.index);  // another read of it stays: still copied
  engine->launch();
  const auto& sent = backend->last_params;
  ASSERT_EQ(sent.jobs, 2U);
  EXPECT_TRUE(sent.job[0].flags & k::kRingCopy);
  EXPECT_NE(sent.job[0].copy_to, 0U);
  EXPECT_FALSE(sent.job[1].flags & k::kRingCopy);
  EXPECT_EQ(sent.job[1].copy_to, 0U);
  EXPECT_EQ(engine_costs.ring_copies_withdrawn, before + 1);
  const Slot launched = queue(tensor(1024, 1 << 21), &stream_a, ring);
  engine->launch();
  engine->withdraw_ring_copy(launched.index);  // too late: the device may be copying it
  EXPECT_EQ(engine_costs.ring_copies_withdrawn, before + 1);
}

TEST_F(DeviceEngineTest, AnInputReadInTheLaunchBeforeSharesItsRoomInTheRingWhileItsBytesAreAlike) {
  CopyRequest output, input;
  output.to = input.to = CopyRequest::To::Ring;
  output.ring_bytes = input.ring_bytes = std::uint64_t{1} << 20;
  input.may_share = true;
  const Slot made = queue(tensor(1024), &stream_a, output);  // a call's output
  engine->launch();
  const Slot read = queue(tensor(1024), &stream_a, input);  // the next call's input: the same bytes
  const Slot other = queue(tensor(1024, 1 << 20), &stream_a, input);  // elsewhere: a room of its own
  engine->launch();
  EXPECT_EQ(read.ring_ticket, made.ring_ticket);
  EXPECT_NE(other.ring_ticket, made.ring_ticket);
  const auto& sent = backend->last_params;
  EXPECT_FALSE(sent.job[0].flags & k::kRingCopy);
  EXPECT_EQ(sent.job[0].copy_to, 0U);
  EXPECT_TRUE(sent.job[1].flags & k::kRingCopy);
  queue(tensor(1024, 1 << 21), &stream_a, output);
  engine->launch();
  const Slot after = queue(tensor(1024), &stream_a, input);  // two launches after it: a room of its own
  engine->launch();
  EXPECT_NE(after.ring_ticket, made.ring_ticket);
  EXPECT_NE(after.ring_ticket, read.ring_ticket);
  const Slot elsewhere = queue(tensor(1024), &stream_b, input);  // another stream: not ordered after it
  engine->launch();
  EXPECT_NE(elsewhere.ring_ticket, after.ring_ticket);
  backend->catch_up();
  backend->result(made.index).position = 7, backend->result(read.index).position = 7;
  EXPECT_TRUE(engine->holds_its_ring_bytes(read.index));
  backend->result(read.index).position = 8;  // written in between by no recorded call
  const auto changed = engine_costs.ring_shares_changed;
  EXPECT_FALSE(engine->holds_its_ring_bytes(read.index));
  EXPECT_EQ(engine_costs.ring_shares_changed, changed + 1);
  EXPECT_TRUE(engine->holds_its_ring_bytes(made.index));  // its own copy
  engine->take(made.index, {});  // the earlier result stays for the later read's comparison
  EXPECT_FALSE(engine->holds_its_ring_bytes(read.index));
  backend->result(read.index).position = 7;
  EXPECT_TRUE(engine->holds_its_ring_bytes(read.index));
}

TEST_F(DeviceEngineTest, TheRingsBytesOfJudgedCallsGoWithoutWaiting) {
  CopyRequest ring;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  const std::uint64_t elements = 8192;
  std::vector<Slot> first;
  for (std::uint32_t j = 0; j < k::kJobsPerLaunch; ++j) {
    first.push_back(queue(tensor(elements, 4096 + std::uint64_t{j} * 4 * elements), &stream_a, ring));
  }
  engine->launch();
  call(&stream_a, elements, ring);
  for (const Slot& s : first) engine->wait(s.index), engine->take(s.index, {});  // judged
  const int waited = backend->waits;
  call(&stream_a, elements, ring);  // over the first launch's bytes
  EXPECT_EQ(backend->waits, waited);
}

TEST_F(DeviceEngineTest, ALaunchReadsTheSameElementsOnceAndAnswersEveryReadOfThem) {
  const auto before = engine_costs;
  const Slot first = queue(tensor(1024), &stream_a);
  const Slot again = queue(tensor(1024), &stream_a);             // a view's output, say
  k::TensorJob reshaped = tensor(1024);  // the same bytes in C order as a 32 x 32 view
  reshaped.ndim = 2, reshaped.sizes[0] = reshaped.sizes[1] = 32;
  reshaped.strides[0] = 32, reshaped.strides[1] = 1;
  const Slot viewed = queue(reshaped, &stream_a);
  // A 32 x 32 slice of a 32 x 64 matrix at that address (strided, in C order), and its transpose:
  // the same elements in another order, walked as the slice lies (another digest).
  k::TensorJob slice = reshaped, transposed = reshaped;
  slice.strides[0] = 64;
  k::set_grouping(slice, false);
  transposed.strides[0] = 1, transposed.strides[1] = 64;
  k::set_grouping(transposed, false);
  k::order_by_memory(slice);
  k::order_by_memory(transposed);
  ASSERT_TRUE(!(slice.flags & k::kMemoryOrder) && (transposed.flags & k::kMemoryOrder));
  ASSERT_EQ(transposed.strides[0], slice.strides[0]);
  const Slot sliced = queue(slice, &stream_a);
  const Slot turned = queue(transposed, &stream_a);
  const Slot turned_again = queue(transposed, &stream_a);
  const Slot strided = queue(tensor(512, 4096, 2), &stream_a);   // other elements at that address
  const Slot shorter = queue(tensor(512), &stream_a);            // fewer of them
  engine->launch();
  EXPECT_EQ(again.index, first.index);
  EXPECT_EQ(viewed.index, first.index);
  EXPECT_NE(sliced.index, first.index);
  EXPECT_NE(turned.index, sliced.index);
  EXPECT_EQ(turned_again.index, turned.index);
  EXPECT_NE(strided.index, first.index);
  EXPECT_NE(shorter.index, first.index);
  EXPECT_EQ(engine_costs.tensors_read - before.tensors_read, 5U);
  EXPECT_EQ(engine_costs.reads_shared - before.reads_shared, 3U);
  const Slot next_launch = queue(tensor(1024), &stream_a);  // read again later: its own read
  EXPECT_NE(next_launch.index, first.index);
  engine->launch();

  // Each read gets the result; the slot goes back only with the last of them.
  engine->wait(first.index);
  const ConsumeBytes none;
  EXPECT_TRUE(engine->take(first.index, none).has_value());
  EXPECT_TRUE(engine->take(again.index, none).has_value());
  EXPECT_TRUE(engine->take(viewed.index, none).has_value());
  const Slot reused = queue(tensor(8), &stream_a);
  EXPECT_EQ(reused.index, first.index);  // the freed slot is the next one given
}

TEST_F(DeviceEngineTest, AReadGivenUpLeavesTheSlotToTheOtherReadsOfIt) {
  const Slot first = queue(tensor(1024), &stream_a);
  const Slot again = queue(tensor(1024), &stream_a);
  engine->launch();
  engine->abandon(first.index);
  engine->wait(again.index);
  EXPECT_NE(queue(tensor(8, 1 << 20), &stream_a).index, first.index);  // still the other read's
  engine->launch();  // which frees the abandoned slots whose launches are done
  EXPECT_NE(queue(tensor(8, 2 << 20), &stream_a).index, first.index);
  const ConsumeBytes none;
  EXPECT_TRUE(engine->take(again.index, none).has_value());
  EXPECT_EQ(queue(tensor(8, 3 << 20), &stream_a).index, first.index);
}

TEST_F(DeviceEngineTest, ReadsForDumpsFilesAreNeverShared) {
  CopyRequest host;
  host.to = CopyRequest::To::Host;
  engine->make_room(&stream_a);
  Slot slot;
  EXPECT_FALSE(engine->share(tensor(1024), host, slot));
  CopyRequest check_ring, ring;
  check_ring.to = ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = check_ring.ring_bytes = std::uint64_t{1} << 20;
  check_ring.check_only = true;
  const Slot recorded = queue(tensor(1024), &stream_a, ring);
  const Slot checked = queue(tensor(1024), &stream_a, check_ring);  // into the ring's other part
  EXPECT_NE(recorded.index, checked.index);
  EXPECT_EQ(queue(tensor(1024), &stream_a, ring).ring_ticket, recorded.ring_ticket);
}

// A launch that copies nothing says its results are there by the stamps beside them: no event is
// recorded for it or asked about, its slots are ready one by one as their stamps land, and the
// launch is forgotten (its slots free again) once all have landed and been taken.
TEST_F(DeviceEngineTest, AStatisticsLaunchIsFollowedByItsStampsNotByAnEvent) {
  const Slot a = queue(tensor(1024, 4096), &stream_a);
  const Slot b = queue(tensor(1024, 1 << 20), &stream_a);
  EXPECT_TRUE(engine->answers_unasked(a.index));  // not launched: not ready, nothing to ask
  EXPECT_FALSE(engine->ready(a.index));
  engine->launch();
  EXPECT_TRUE(engine->answers_unasked(a.index));
  EXPECT_FALSE(engine->ready(a.index));
  backend->catch_up();
  EXPECT_TRUE(engine->ready(a.index));
  EXPECT_TRUE(engine->ready(b.index));
  EXPECT_EQ(backend->events, 0);
  EXPECT_EQ(backend->questions, 0);
  EXPECT_EQ(backend->waits, 0);
  const ConsumeBytes none;
  EXPECT_TRUE(engine->take(a.index, none).has_value());
  EXPECT_TRUE(engine->take(b.index, none).has_value());
  // Both slots are free again, the most recently freed given first.
  EXPECT_EQ(queue(tensor(8, 2 << 20), &stream_a).index, b.index);
  EXPECT_EQ(queue(tensor(8, 3 << 20), &stream_a).index, a.index);
}

// A slot taken while another of its launch has not landed yet is freed and given to a later
// launch, which stamps it anew: the first launch must still finish when its other slot lands.
TEST_F(DeviceEngineTest, ALaunchFinishesThoughASlotOfItWasTakenAndStampedAgain) {
  const Slot a = queue(tensor(1024, 4096), &stream_a);
  const Slot b = queue(tensor(1024, 1 << 20), &stream_a);
  engine->launch();
  backend->land(a.index);
  const ConsumeBytes none;
  ASSERT_TRUE(engine->ready(a.index));
  EXPECT_TRUE(engine->take(a.index, none).has_value());
  const Slot again = queue(tensor(8, 2 << 20), &stream_a);
  ASSERT_EQ(again.index, a.index);
  engine->launch();
  backend->land(again.index);  // the slot's stamp is the later launch's now
  EXPECT_FALSE(engine->ready(b.index));
  engine->wait(b.index);
  EXPECT_TRUE(engine->take(b.index, none).has_value());
  EXPECT_TRUE(engine->ready(again.index));
  EXPECT_TRUE(engine->take(again.index, none).has_value());
  EXPECT_EQ(backend->events, 0);
}

// Bytes copied into the ring (device memory) are done when the stamps have landed: each block
// copies its share before it arrives. Bytes copied to the host (`dump`) are known to be there only
// when the launch has finished: such a launch is followed by its event, asked about only where
// events may be.
TEST_F(DeviceEngineTest, OnlyALaunchThatCopiesToTheHostIsFollowedByAnEvent) {
  CopyRequest ring, host;
  ring.to = CopyRequest::To::Ring;
  ring.ring_bytes = std::uint64_t{1} << 20;
  host.to = CopyRequest::To::Host;
  const Slot kept = queue(tensor(1024), &stream_a, ring);
  engine->launch();
  EXPECT_TRUE(engine->answers_unasked(kept.index));
  const Slot copied = queue(tensor(1024, 1 << 20), &stream_a, host);
  engine->launch();
  EXPECT_EQ(backend->events, 1);
  EXPECT_FALSE(engine->answers_unasked(copied.index));
  backend->catch_up();  // both launches' stamps have landed, but the second's event has not passed
  EXPECT_TRUE(engine->ready(kept.index));
  EXPECT_FALSE(engine->ready(copied.index));
  EXPECT_EQ(backend->questions, 1);
}

// A launch that fails on the device never stamps its results: waiting for it ends, and its reads
// come back without a result (recorded without values), not with another launch's.
TEST_F(DeviceEngineTest, ALaunchWhoseStampsNeverComeFailsItsReads) {
  const auto failures = engine_costs.launch_failures;
  const Slot a = queue(tensor(1024), &stream_a);
  engine->launch();
  backend->fail_waits = true;
  engine->wait(a.index);
  EXPECT_TRUE(engine->ready(a.index));
  const ConsumeBytes none;
  EXPECT_FALSE(engine->take(a.index, none).has_value());
  EXPECT_EQ(engine_costs.launch_failures, failures + 1);
}

}  // namespace
}  // namespace ophook::device
