// RecordQueue: bytes-capped, producers wait instead of dropping, the writer drains in order.
#include "ophook/model/record_queue.hpp"

#include "ophook/model/record_pool.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

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
  RecordQueue queue(std::size_t{64} << 10);
  auto huge = record_of(0, std::size_t{1} << 20);
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
  EXPECT_GT(queue.producer_waits().count, 0u);
  EXPECT_GT(queue.producer_waits().ns, 0u);  // time measured for each wait
}

TEST(RecordQueue, ManyProducersLoseNothingAndKeepEachThreadsOrder) {
  const auto one = record_of(0, 256)->footprint();
  RecordQueue queue(one * 64);
  constexpr int kThreads = 4, kPerThread = 3000;
  std::map<std::int32_t, std::vector<std::uint64_t>> seen;  // tid -> seqs in pop order
  std::thread writer([&] {
    std::deque<RecordPtr> batch;
    while (queue.pop_all(batch, std::chrono::milliseconds(1))) {
      for (auto& r : batch) {
        seen[r->tid].push_back(r->seq);
        queue.release(std::move(r));  // recycled into the pool the producers take from
      }
      batch.clear();
    }
  });
  std::vector<std::thread> producers;
  producers.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto r = RecordPool::take();
        EXPECT_TRUE(r->values.empty() && r->arrays.empty() && r->seq == 0);
        r->tid = t;
        r->seq = static_cast<std::uint64_t>(i);
        r->values.resize(256);
        r->new_array().reserve_data(100);
        if (!queue.try_push(r)) queue.push(std::move(r));
      }
    });
  }
  for (auto& p : producers) p.join();
  queue.wait_drained();
  EXPECT_EQ(queue.bytes_held(), 0u);
  queue.close();
  writer.join();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads));
  for (const auto& [tid, seqs] : seen) {
    ASSERT_EQ(seqs.size(), static_cast<std::size_t>(kPerThread)) << tid;
    EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end())) << tid;
  }
}

TEST(RecordPool, AGivenRecordComesBackClearedWithItsSmallBuffers) {
  auto r = RecordPool::take();
  CallRecord* const address = r.get();
  r->seq = 7, r->has_error = true, r->error = "ValueError: x";
  r->values.resize(300);
  auto& array = r->new_array();
  array.shape = {4, 5};
  std::memset(array.reserve_data(160), 1, 160);
  array.captured = true;
  RecordPool::give(std::move(r));

  std::vector<RecordPtr> taken;  // other tests may have left records in the pool too
  for (int i = 0; i < 10000 && (taken.empty() || taken.back().get() != address); ++i) taken.push_back(RecordPool::take());
  ASSERT_EQ(taken.back().get(), address);
  auto& back = *taken.back();
  EXPECT_EQ(back.seq, 0u);
  EXPECT_FALSE(back.has_error);
  EXPECT_TRUE(back.error.empty() && back.values.empty() && back.arrays.empty());
  EXPECT_GE(back.values.capacity(), 300u);
  auto& slot = back.new_array();
  EXPECT_TRUE(slot.shape.empty());
  EXPECT_FALSE(slot.captured);
  EXPECT_EQ(slot.alias_of, -1);
  EXPECT_GE(slot.data_capacity, 160u);  // the buffer is reused, not reallocated
}

TEST(CallRecord, ClearedArraySlotsAreFilledInPlaceAndCapped) {
  CallRecord r;
  for (int i = 0; i < 20; ++i) {
    auto& slot = r.new_array();
    slot.shape = {1, 2, 3};
    slot.alias_of = 0;
    slot.captured = true;
    slot.reserve_data(64);
  }
  const auto* first_slot = &r.arrays[0];
  const auto* first_shape = r.arrays[0].shape.data();
  r.clear_for_reuse();
  EXPECT_TRUE(r.arrays.empty());
  EXPECT_EQ(r.arrays.begin(), r.arrays.end());
  auto& again = r.new_array();
  EXPECT_EQ(&again, first_slot);  // the same slot, not a moved copy
  EXPECT_TRUE(again.shape.empty() && !again.captured && again.alias_of == -1 && again.nbytes == 0);
  again.shape.assign({4, 5, 6});
  EXPECT_EQ(again.shape.data(), first_shape);  // its shape buffer reused
  // 20 slots were in use; a cleared record keeps 16 with their buffers, so the 17th is new.
  for (int i = 1; i < 16; ++i) EXPECT_GE(r.new_array().data_capacity, 64u) << i;
  EXPECT_EQ(r.new_array().data_capacity, 0u);
  EXPECT_EQ(r.arrays.size(), 17u);
}

TEST(RecordPool, LargeBuffersAreNotKept) {
  auto r = RecordPool::take();
  CallRecord* const address = r.get();
  r->new_array().reserve_data(1 << 20);
  RecordPool::give(std::move(r));
  std::vector<RecordPtr> taken;
  for (int i = 0; i < 10000 && (taken.empty() || taken.back().get() != address); ++i) taken.push_back(RecordPool::take());
  ASSERT_EQ(taken.back().get(), address);
  EXPECT_EQ(taken.back()->new_array().data_capacity, 0u);
  EXPECT_LT(taken.back()->footprint(), std::size_t{64} << 10);
}

// wait_for_room: the capturing side waits for room before it copies an array.
TEST(RecordQueueRoom, HasRoomCountsWhatIsQueued) {
  const auto one = record_of(0, 1000)->footprint();
  RecordQueue queue(one * 2);
  EXPECT_TRUE(queue.has_room(one * 10));  // nothing queued: anything may start
  queue.push(record_of(0, 1000));
  EXPECT_TRUE(queue.has_room(one));
  EXPECT_FALSE(queue.has_room(one + 1));
}

TEST(RecordQueueRoom, WaitForRoomReturnsOnlyOnceTheWriterReleasedEnough) {
  const auto one = record_of(0, 1000)->footprint();
  RecordQueue queue(one * 2);
  queue.push(record_of(0, 1000));
  queue.push(record_of(1, 1000));
  std::atomic<bool> done{false};
  std::thread producer([&] {
    queue.wait_for_room(one);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());  // the queue is full: the copy must not start
  std::deque<RecordPtr> batch;
  ASSERT_TRUE(queue.pop_all(batch, std::chrono::milliseconds(1)));
  ASSERT_EQ(batch.size(), 2u);
  queue.release(std::move(batch.front()));  // one record's bytes free: enough for the producer
  batch.clear();
  ASSERT_TRUE(queue.pop_all(batch, std::chrono::milliseconds(1)));  // the writer's next turn
  producer.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(queue.bytes_held(), one);
}

TEST(RecordQueueRoom, WaitForRoomReturnsWhenTheQueueCloses) {
  const auto one = record_of(0, 1000)->footprint();
  RecordQueue queue(one);
  queue.push(record_of(0, 1000));
  std::thread producer([&] { queue.wait_for_room(one); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  queue.close();
  producer.join();  // never hangs: late calls at exit go on (and are dropped by the recorder)
}

TEST(RecordQueueRoom, AFlushWaitsForTheWholeBatchAndSeesEveryRecordReleased) {
  RecordQueue queue(std::size_t{1} << 30);
  constexpr int kRecords = 500;
  for (int i = 0; i < kRecords; ++i) queue.push(record_of(static_cast<std::uint64_t>(i), 100));
  std::atomic<int> written{0};
  std::thread writer([&] {
    std::deque<RecordPtr> batch;
    while (queue.pop_all(batch, std::chrono::milliseconds(1))) {
      for (auto& r : batch) {
        ++written;
        queue.release(std::move(r));
      }
      batch.clear();
    }
  });
  queue.wait_drained();
  EXPECT_EQ(written.load(), kRecords);
  EXPECT_EQ(queue.bytes_held(), 0u);
  queue.close();
  writer.join();
}

}  // namespace
}  // namespace ophook::core
