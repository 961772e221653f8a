// RecordQueue: bytes-capped, producers wait instead of dropping, the writer drains in order.
#include "ophook/record_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace ophook::core {
namespace {

RecordPtr record_of(std::uint64_t seq, std::size_t payload) {
  auto r = std::make_unique<CallRecord>();
  r->seq = seq;
  r->values.resize(payload);
  return r;
}

TEST(RecordQueue, TryPushRefusesBeyondTheCapAndLeavesTheRecord) {
  const auto one = record_of(0, 1000)->footprint();
  RecordQueue queue(one * 2);
  auto a = record_of(0, 1000), b = record_of(1, 1000), c = record_of(2, 1000);
  EXPECT_TRUE(queue.try_push(a));
  EXPECT_TRUE(queue.try_push(b));
  EXPECT_FALSE(queue.try_push(c));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->seq, 2u);
  EXPECT_EQ(queue.bytes_held(), one * 2);
}

TEST(RecordQueue, ARecordLargerThanTheCapIsAdmittedWhenEmpty) {
  RecordQueue queue(64 * 1024);
  auto huge = record_of(0, 1 << 20);
  EXPECT_TRUE(queue.try_push(huge));
}

TEST(RecordQueue, ProducersWaitForTheWriterAndNothingIsLost) {
  const auto one = record_of(0, 4096)->footprint();
  RecordQueue queue(one * 4);
  constexpr int kRecords = 2000;
  std::vector<std::uint64_t> seen;
  std::thread writer([&] {
    std::deque<RecordPtr> batch;
    while (queue.pop_all(batch, std::chrono::milliseconds(1))) {
      for (auto& r : batch) {
        seen.push_back(r->seq);
        queue.release(r->footprint(), 1);
      }
      batch.clear();
    }
  });
  for (int i = 0; i < kRecords; ++i) {
    auto r = record_of(static_cast<std::uint64_t>(i), 4096);
    if (!queue.try_push(r)) queue.push(std::move(r));
    EXPECT_LE(queue.bytes_held(), one * 4);
  }
  queue.wait_drained();
  EXPECT_EQ(queue.bytes_held(), 0u);
  queue.close();
  writer.join();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kRecords));
  for (int i = 0; i < kRecords; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i));
  EXPECT_GT(queue.producer_waits(), 0u);
}

}  // namespace
}  // namespace ophook::core
