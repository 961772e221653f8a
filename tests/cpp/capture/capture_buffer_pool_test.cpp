// CaptureBufferPool keeps the large buffers the writer is done with for the next copies of about
// their size, and its idle bytes count against the queue's cap.
#include "ophook/capture/capture_buffer_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ophook/model/record.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/model/record_queue.hpp"

namespace ophook::core {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

SpareBuffer fresh(std::size_t bytes) { return {std::make_unique_for_overwrite<std::byte[]>(bytes), bytes}; }

/// Each test starts and ends with an empty pool allowed `limit` idle bytes.
class CaptureBufferPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { CaptureBufferPool::set_limit(64 * kMiB); }
  void TearDown() override { CaptureBufferPool::set_limit(0); }
};

TEST_F(CaptureBufferPoolTest, AGivenBufferComesBackForItsSizeOrAnEighthLess) {
  auto buffer = fresh(8 * kMiB);
  const std::byte* address = buffer.data.get();
  CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 8 * kMiB);
  EXPECT_EQ(CaptureBufferPool::take(8 * kMiB + 1).data, nullptr);  // too small
  EXPECT_EQ(CaptureBufferPool::take(7 * kMiB - 1).data, nullptr);  // more than an eighth too big
  const auto spare = CaptureBufferPool::take(7 * kMiB + kMiB / 8);
  EXPECT_EQ(spare.data.get(), address);
  EXPECT_EQ(spare.capacity, 8 * kMiB);
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 0u);
  EXPECT_EQ(CaptureBufferPool::take(8 * kMiB).data, nullptr);  // taken once only
}

TEST_F(CaptureBufferPoolTest, TheSmallestFittingBufferIsTaken) {
  for (const std::size_t mib : {10, 9, 12}) {
    auto buffer = fresh(mib * kMiB);
    CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
  }
  EXPECT_EQ(CaptureBufferPool::take(9 * kMiB).capacity, 9 * kMiB);
  EXPECT_EQ(CaptureBufferPool::take(9 * kMiB).capacity, 10 * kMiB);
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 12 * kMiB);
}

TEST_F(CaptureBufferPoolTest, SmallBuffersAndBuffersBeyondTheLimitAreFreed) {
  auto small = fresh(CaptureBufferPool::kMinBytes - 1);
  CaptureBufferPool::give(std::move(small.data), small.capacity);
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 0u);
  auto huge = fresh(65 * kMiB);
  CaptureBufferPool::give(std::move(huge.data), huge.capacity);
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 0u);
  // Within the limit the newest buffers stay: the oldest make room for them.
  for (int i = 0; i < 5; ++i) {
    auto buffer = fresh(16 * kMiB);
    CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
    EXPECT_LE(CaptureBufferPool::idle_bytes(), 64 * kMiB);
  }
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 64 * kMiB);
  CaptureBufferPool::set_limit(0);  // a run ends
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 0u);
}

TEST_F(CaptureBufferPoolTest, AtMostSoManyBuffersStayIdleTheNewest) {
  const std::size_t size = CaptureBufferPool::kMinBytes;
  for (std::size_t i = 0; i < CaptureBufferPool::kMaxIdle + 10; ++i) {
    auto buffer = fresh(size + i);  // a capacity of its own, to tell which stayed
    CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
  }
  std::size_t expected = 0;
  for (std::size_t i = 10; i < CaptureBufferPool::kMaxIdle + 10; ++i) expected += size + i;
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), expected);
  EXPECT_EQ(CaptureBufferPool::take(size + 9).capacity, size + 10);  // the oldest ten went
}

TEST_F(CaptureBufferPoolTest, HasRoomFreesIdleBuffersThatWouldTakeTheTotalOverTheCap) {
  for (int i = 0; i < 3; ++i) {
    auto buffer = fresh(16 * kMiB);
    CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
  }
  RecordQueue queue(64 * kMiB);
  auto queued = std::make_unique<CallRecord>();
  queued->new_array().reserve_data(8 * kMiB);
  const auto queued_bytes = queued->footprint();
  queue.push(std::move(queued));
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 48 * kMiB);  // queued + idle fit: nothing freed
  ASSERT_TRUE(queue.has_room(23 * kMiB));
  // 8 MiB queued (and its record) + 23 MiB about to be copied leave room for 32 MiB idle, not 48:
  // the oldest 16 MiB went.
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 32 * kMiB);
  EXPECT_LE(queued_bytes + 23 * kMiB + CaptureBufferPool::idle_bytes(), 64 * kMiB);
  EXPECT_FALSE(queue.has_room(60 * kMiB));  // does not fit beside what is queued: nothing freed
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 32 * kMiB);
}

TEST_F(CaptureBufferPoolTest, QueueingARecordFreesNoIdleBuffer) {
  // A record's memory exists before it is queued (its copies asked has_room first), so queueing it
  // must not free the idle buffers the next copies will take.
  for (int i = 0; i < 3; ++i) {
    auto buffer = fresh(16 * kMiB);
    CaptureBufferPool::give(std::move(buffer.data), buffer.capacity);
  }
  RecordQueue queue(64 * kMiB);
  for (int i = 0; i < 2; ++i) {
    auto record = std::make_unique<CallRecord>();
    record->new_array().reserve_data(8 * kMiB);
    queue.push(std::move(record));
  }
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 48 * kMiB);
}

TEST_F(CaptureBufferPoolTest, ThreadsTakingGivingAndTrimmingAtOnceKeepTheAccountExact) {
  // Program threads take and trim while the writer gives: every buffer ends either idle (and
  // counted) or freed, and the idle count never exceeds the limit.
  std::atomic<bool> over_limit{false};
  std::vector<std::thread> threads;
  threads.reserve(3);
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([t, &over_limit] {
      for (int i = 0; i < 300; ++i) {
        const std::size_t bytes = (1 + (i + t) % 3) * kMiB;
        auto spare = CaptureBufferPool::take(bytes);
        if (!spare.data) spare = fresh(bytes);
        spare.data[0] = std::byte{1};  // the buffer is this thread's alone
        if (i % 7 == 0) CaptureBufferPool::trim(8 * kMiB);
        CaptureBufferPool::give(std::move(spare.data), spare.capacity);
        if (CaptureBufferPool::idle_bytes() > 64 * kMiB) over_limit = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(over_limit.load());
  std::size_t counted = 0;
  for (SpareBuffer spare; (spare = CaptureBufferPool::take(kMiB)).data || (spare = CaptureBufferPool::take(2 * kMiB)).data ||
                          (spare = CaptureBufferPool::take(3 * kMiB)).data;) {
    counted += spare.capacity;
  }
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 0u);
  EXPECT_GT(counted, 0u);
}

TEST_F(CaptureBufferPoolTest, ARecycledRecordsLargeBufferServesTheNextCopy) {
  auto record = RecordPool::take();
  const std::byte* address = record->new_array().reserve_data(4 * kMiB);
  RecordPool::give(std::move(record));  // the writer is done with it: its large buffer is idle
  EXPECT_EQ(CaptureBufferPool::idle_bytes(), 4 * kMiB);
  ArrayCapture next;
  EXPECT_EQ(next.reserve_data(4 * kMiB, CaptureBufferPool::take(4 * kMiB)), address);
  EXPECT_EQ(next.data_capacity, 4 * kMiB);
  EXPECT_EQ(next.nbytes, 4 * kMiB);
}

}  // namespace
}  // namespace ophook::core
