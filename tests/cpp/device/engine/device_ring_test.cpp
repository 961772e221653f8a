// The device part of OPHOOK_RING_BYTES' ring (src/device/engine/device_ring.cpp) on a backend
// whose "device memory" is a host buffer: where rooms go, which entries a room overwrites (and
// whose launches it asks about first), which it keeps aside for the gate, what a fetch returns
// before and after its launch says what it copied.
#include "device/engine/device_ring.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <array>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/driver/backend.hpp"

namespace ophook::device {
namespace {

/// Only the copy to the host is used by the ring; the rest never runs here.
class HostMemoryBackend final : public Backend {
 public:
  const statistics_kernel::Result* results() const override { return nullptr; }
  const std::uint32_t* ring_copies() const override { return nullptr; }
  const std::byte* staging(std::uint64_t /*bytes*/, std::uint64_t& /*device_address*/) override { return nullptr; }
  std::uint64_t ring_memory(std::uint64_t /*bytes*/, std::string& /*why*/) override { return 0; }
  bool copy_to_host(std::byte* to, std::uint64_t from, std::size_t n) noexcept override {
    ++copies;
    std::memcpy(to, reinterpret_cast<const std::byte*>(from), n);  // NOLINT(performance-no-int-to-ptr)
    return true;
  }
  bool launch(Kernel /*kernel*/, statistics_kernel::LaunchParams& /*params*/, std::uint32_t /*blocks*/,
              void* /*stream*/, std::string& /*why*/) override {
    return false;
  }
  bool arrived(std::uint32_t /*slot*/, std::uint64_t /*stamp*/) override { return true; }
  bool wait_until(const std::function<bool()>& landed, void* /*stream*/) override { return landed(); }
  Event record(void* /*stream*/) override { return nullptr; }
  bool finished(Event /*event*/) override { return true; }
  void wait(Event /*event*/) override {}
  void recycle(Event /*event*/) override {}
  bool capturing(void* /*stream*/) override { return false; }
  int dlpack_device_type() const override { return 1; }
  int copies = 0;
};

class DeviceRingTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kCapacity = 4096;

  /// Room for `n` bytes of launch `launch`, `answer` given for the launches of the entries it
  /// takes over; nothing written or settled yet.
  std::optional<DeviceRing::Place> room(std::uint64_t n, std::uint64_t launch,
                                        DeviceRing::Overwrite answer = DeviceRing::Overwrite::Yes,
                                        core::ElementWidener widen = nullptr) {
    return ring.take(n, n, widen, launch, [&](std::uint64_t l) {
      asked.push_back(l);
      return answer;
    });
  }

  /// room(), filled with `value` as the kernel would, and settled as copied.
  std::optional<DeviceRing::Place> put(std::uint64_t n, std::uint64_t launch, int value,
                                       DeviceRing::Overwrite answer = DeviceRing::Overwrite::Yes,
                                       core::ElementWidener widen = nullptr) {
    auto place = room(n, launch, answer, widen);
    if (place) {
      std::memset(reinterpret_cast<void*>(place->device_address), value, n);  // NOLINT(performance-no-int-to-ptr)
      ring.settle(place->ticket, statistics_kernel::kCopiedAll);
    }
    return place;
  }

  /// Two 2 KiB rooms that fill the ring, filled with 1 and 2 (launches 5 and 6), then room for
  /// `third_bytes` of launch 7 over the first: kept aside.
  std::array<DeviceRing::Place, 3> fill_then_keep_first(std::uint64_t third_bytes) {
    const auto first = put(2048, 5, 1);
    const auto second = put(2048, 6, 2);
    const auto third = room(third_bytes, 7);
    EXPECT_TRUE(first && second && third);
    return {*first, *second, *third};
  }

  std::vector<std::byte> fetch(std::uint64_t ticket, std::size_t n, bool& ok) {
    std::vector<std::byte> out(n);
    ok = ring.fetch(ticket, out.data(), n);
    return out;
  }

  std::vector<std::byte> memory = std::vector<std::byte>(kCapacity);
  HostMemoryBackend backend;
  DeviceRing ring{backend, reinterpret_cast<std::uintptr_t>(memory.data()), kCapacity};
  std::vector<std::uint64_t> asked;
};

TEST_F(DeviceRingTest, RoomsFollowEachOtherAndKeepTheirBytes) {
  const auto a = put(1000, 0, 1), b = put(1000, 1, 2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->device_address - a->device_address, 1024u);  // rounded up to whole 256-byte lines
  bool ok = false;
  EXPECT_EQ(fetch(a->ticket, 1000, ok), std::vector<std::byte>(1000, std::byte{1}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(fetch(b->ticket, 1000, ok), std::vector<std::byte>(1000, std::byte{2}));
  EXPECT_TRUE(ok);
  EXPECT_TRUE(asked.empty());
  fetch(a->ticket, 999, ok);  // not the size it holds: nothing copied
  EXPECT_FALSE(ok);
  EXPECT_EQ(backend.copies, 2);
}

TEST_F(DeviceRingTest, AFullRingOverwritesItsOldestAndAsksAboutTheirLaunches) {
  std::vector<DeviceRing::Place> places;
  places.reserve(4);
  for (int i = 0; i < 4; ++i) places.push_back(*put(1024, 10 + i, 10 + i));
  const auto wrapped = put(1536, 20, 20);  // back to the start: over the first two
  ASSERT_TRUE(wrapped);
  EXPECT_EQ(wrapped->device_address, places[0].device_address);
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{10, 11}));
  bool ok = true;
  fetch(places[0].ticket, 1024, ok);
  EXPECT_FALSE(ok);
  fetch(places[1].ticket, 1024, ok);
  EXPECT_FALSE(ok);
  for (int i = 2; i < 4; ++i) {
    EXPECT_EQ(fetch(places[i].ticket, 1024, ok), std::vector<std::byte>(1024, std::byte(10 + i)));
    EXPECT_TRUE(ok);
  }
  // The next room, after it, takes the third's place.
  asked.clear();
  const auto next = put(1024, 21, 21);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->device_address, places[0].device_address + 1536);
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{12}));
  // 2 KiB do not fit before the end: back to the start. The fourth, past the head, goes (the
  // oldest, though this room does not reach it), and the two the room covers.
  asked.clear();
  const auto last = put(2048, 22, 22);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->device_address, places[0].device_address);
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{13, 20, 21}));
  for (const auto& [ticket, size] : {std::pair{places[3].ticket, 1024}, {wrapped->ticket, 1536}, {next->ticket, 1024}}) {
    fetch(ticket, size, ok);
    EXPECT_FALSE(ok);
  }
  EXPECT_EQ(fetch(last->ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{22}));
  EXPECT_TRUE(ok);
}

TEST_F(DeviceRingTest, ARefusedOverwriteTakesNothing) {
  const auto first = put(2048, 5, 1);
  const auto second = put(2048, 6, 2);
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(put(1024, 6, 3, DeviceRing::Overwrite::Never));  // its own launch's bytes would go
  bool ok = false;
  EXPECT_EQ(fetch(first->ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  EXPECT_FALSE(put(kCapacity / 2 + 1, 7, 4));  // more than half the ring: never
}

TEST_F(DeviceRingTest, BytesNotYetCopiedOrNotCopiedAtAllAreNotFetched) {
  const auto pending = room(1024, 5);
  ASSERT_TRUE(pending);
  bool ok = true;
  fetch(pending->ticket, 1024, ok);
  EXPECT_FALSE(ok);  // its launch's result is not in
  EXPECT_TRUE(ring.settle(pending->ticket, statistics_kernel::kCopiedNone));
  EXPECT_FALSE(ring.settle(pending->ticket, statistics_kernel::kCopiedAll));  // once
  fetch(pending->ticket, 1024, ok);
  EXPECT_FALSE(ok);  // the gate kept them out
  const auto half = room(1024, 6);
  ring.settle(half->ticket, statistics_kernel::kCopiedPart);
  fetch(half->ticket, 1024, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(backend.copies, 0);
}

TEST_F(DeviceRingTest, BytesOfCallsNotYetJudgedAreKeptAsideWhileTheRoomsOverThemCopiedNothing) {
  // Over the first, whose calls are not judged: taken at once, the first kept aside.
  const auto [first, second, third] = fill_then_keep_first(1024);
  EXPECT_EQ(third.device_address, first.device_address);
  bool ok = true;
  fetch(first.ticket, 2048, ok);
  EXPECT_FALSE(ok);  // the third's launch may have copied over them: not known yet
  ring.settle(third.ticket, statistics_kernel::kCopiedNone);  // the gate was closed
  EXPECT_EQ(fetch(first.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  // A room over the first's other half that copied: gone.
  const auto fourth = put(1024, 8, 4);
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->device_address, first.device_address + 1024);
  fetch(first.ticket, 2048, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(fetch(fourth->ticket, 1024, ok), std::vector<std::byte>(1024, std::byte{4}));
  EXPECT_TRUE(ok);
}

TEST_F(DeviceRingTest, BytesKeptAsideGoWhenTheRoomOverThemCopies) {
  const auto [first, second, third] = fill_then_keep_first(2048);
  std::memset(reinterpret_cast<void*>(third.device_address), 3, 2048);  // NOLINT(performance-no-int-to-ptr)
  ring.settle(third.ticket, statistics_kernel::kCopiedAll);
  bool ok = true;
  fetch(first.ticket, 2048, ok);
  EXPECT_FALSE(ok);
  EXPECT_EQ(fetch(third.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{3}));
  EXPECT_TRUE(ok);
}

TEST_F(DeviceRingTest, BytesTheRoomsOverThemLeftStayAndBytesKeptOutAreNotKeptAside) {
  const auto [first, second, third] = fill_then_keep_first(2048);
  ring.settle(third.ticket, statistics_kernel::kCopiedNone);
  ring.forget_overwritten();  // nothing copied over the first: it stays, judged or not
  bool ok = false;
  EXPECT_EQ(fetch(first.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  const auto fourth = room(2048, 8);  // over the second
  ring.settle(fourth->ticket, statistics_kernel::kCopiedNone);
  const auto fifth = room(2048, 9);  // over the third, which copied nothing: not kept aside
  ring.settle(fifth->ticket, statistics_kernel::kCopiedNone);
  EXPECT_EQ(fetch(second.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{2}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(fetch(first.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  fetch(third.ticket, 2048, ok);
  EXPECT_FALSE(ok);
}

TEST_F(DeviceRingTest, AWithdrawnRoomLeavesWhatItTookOverAndGoesBackWhenNewest) {
  const auto [first, second, third] = fill_then_keep_first(1024);
  ring.withdraw(third.ticket);  // its call outgrew the ring: nothing copied there
  bool ok = false;
  EXPECT_EQ(fetch(first.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  fetch(third.ticket, 1024, ok);
  EXPECT_FALSE(ok);
  EXPECT_FALSE(ring.settle(third.ticket, statistics_kernel::kCopiedAll));  // its launch's answer changes nothing
  // The next room begins where the withdrawn one did; a withdrawn room with a newer one after it
  // keeps its place.
  const auto fourth = room(512, 8), fifth = room(512, 8);
  ASSERT_TRUE(fourth && fifth);
  EXPECT_EQ(fourth->device_address, third.device_address);
  ring.withdraw(fourth->ticket);
  const auto sixth = room(512, 9);
  ASSERT_TRUE(sixth);
  EXPECT_EQ(sixth->device_address, fifth->device_address + 512);
  fetch(first.ticket, 2048, ok);
  EXPECT_FALSE(ok);  // the fifth and sixth may copy over it: not known yet
  ring.settle(fifth->ticket, statistics_kernel::kCopiedNone);
  ring.settle(sixth->ticket, statistics_kernel::kCopiedNone);
  EXPECT_EQ(fetch(first.ticket, 2048, ok), std::vector<std::byte>(2048, std::byte{1}));
  EXPECT_TRUE(ok);
  EXPECT_TRUE(put(1024, 10, 5));  // a room that copies over the rest of it: gone
  fetch(first.ticket, 2048, ok);
  EXPECT_FALSE(ok);
}

void widen_bytes(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) dst[2 * i] = dst[2 * i + 1] = src[i];
}

TEST_F(DeviceRingTest, ANarrowFormatIsWidenedWhenFetched) {
  const auto place = put(100, 0, 7, DeviceRing::Overwrite::Yes, &widen_bytes);
  ASSERT_TRUE(place);
  bool ok = false;
  EXPECT_EQ(fetch(place->ticket, 200, ok), std::vector<std::byte>(200, std::byte{7}));
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace ophook::device
