// The host memory `dump`'s bytes cross into from a device (src/device/engine/staging_memory.cpp):
// its ranges are lent to records as their copies and given back by whichever thread lets the last
// copy go, in any order; a full memory makes the program wait for the writer, not fail.
#include "device/engine/staging_memory.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace ophook::device {
namespace {

constexpr std::uint64_t kSize = 1024;
constexpr std::uint64_t kDeviceAddress = 1 << 20;

class StagingMemoryTest : public ::testing::Test {
 protected:
  std::vector<std::byte> host = std::vector<std::byte>(kSize);
  std::shared_ptr<StagingMemory> staging = std::make_shared<StagingMemory>(host.data(), kDeviceAddress, kSize);

  /// Where the copy's bytes lie in `host`.
  std::uint64_t offset_of(const StagingMemory::Range& range) const {
    return static_cast<std::uint64_t>(range.copy->bytes() - host.data());
  }
};

TEST_F(StagingMemoryTest, ARangeIsTheCopysBytesAndWhereTheDeviceWritesThem) {
  const auto a = staging->take(100);
  const auto b = staging->take(100);
  ASSERT_TRUE(a.copy && b.copy);
  EXPECT_EQ(offset_of(a), 0u);
  EXPECT_EQ(offset_of(b), 112u);  // 16-byte aligned
  EXPECT_EQ(a.device_address, kDeviceAddress);
  EXPECT_EQ(b.device_address, kDeviceAddress + 112);
}

TEST_F(StagingMemoryTest, RangesGivenBackInAnyOrderAreTakenAgainWhole) {
  auto a = staging->take(256), b = staging->take(256), c = staging->take(256), d = staging->take(256);
  ASSERT_TRUE(a.copy && b.copy && c.copy && d.copy);
  EXPECT_FALSE(staging->take(16).copy);  // full
  // A copy records keep sharing (a weight unchanged for steps) holds its range; the ranges beside
  // it come back and merge.
  c.copy.reset();
  a.copy.reset();
  b.copy.reset();
  EXPECT_FALSE(staging->take(769).copy);
  const auto merged = staging->take(768);
  ASSERT_TRUE(merged.copy);
  EXPECT_EQ(offset_of(merged), 0u);
}

TEST_F(StagingMemoryTest, TheLastHolderGivesTheRangeBack) {
  auto a = staging->take(kSize);
  ASSERT_TRUE(a.copy);
  std::shared_ptr<const core::SharedCopy> record = a.copy;  // a record's array, then the slot lets go
  a.copy.reset();
  EXPECT_FALSE(staging->take(16).copy);
  record.reset();
  EXPECT_TRUE(staging->take(kSize).copy);
}

TEST_F(StagingMemoryTest, AFullMemoryWaitsForTheWritersThreadToGiveBack) {
  auto held = staging->take(kSize);
  ASSERT_TRUE(held.copy);
  std::atomic<bool> queued{true};
  std::thread writer([&, copy = std::move(held.copy)]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    copy.reset();  // the record is written
    queued = false;
  });
  EXPECT_TRUE(staging->wait_for_room(kSize, [&] { return queued.load(); }));
  writer.join();
  EXPECT_TRUE(staging->take(kSize).copy);
}

TEST_F(StagingMemoryTest, AFullMemoryNothingWillGiveBackIsNotWaitedFor) {
  const auto own = staging->take(kSize);  // held by the caller itself
  ASSERT_TRUE(own.copy);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(staging->wait_for_room(16, [] { return false; }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Until a range comes back, the next tensors do not wait again while nothing is coming.
  const auto again = std::chrono::steady_clock::now();
  EXPECT_FALSE(staging->wait_for_room(16, [] { return false; }));
  EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(5));
}

TEST_F(StagingMemoryTest, ARangeComingBackEndsTheStandstill) {
  auto own = staging->take(kSize);
  ASSERT_TRUE(own.copy);
  EXPECT_FALSE(staging->wait_for_room(16, [] { return false; }));
  own.copy.reset();
  EXPECT_TRUE(staging->wait_for_room(16, [] { return false; }));
}

}  // namespace
}  // namespace ophook::device
