// The hand-off from the program's thread to the writer: push a batch of records, pop them all,
// release their bytes; against the obvious implementation, a mutex-guarded std::deque.
#include <benchmark/benchmark.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "bench_pairs.hpp"
#include "ophook/model/record_queue.hpp"

namespace {

using ophook::core::CallRecord;
using ophook::core::RecordPtr;
using ophook::core::RecordQueue;

constexpr std::size_t kBatch = 64;

std::vector<RecordPtr> make_records() {
  std::vector<RecordPtr> records;
  for (std::size_t i = 0; i < kBatch; ++i) records.push_back(std::make_unique<CallRecord>());
  return records;
}

void record_queue_ours(benchmark::State& state) {
  RecordQueue queue(std::size_t{256} << 20);
  auto records = make_records();
  std::deque<RecordPtr> popped;
  for (auto _ : state) {
    std::size_t bytes = 0;
    for (auto& r : records) {
      bytes += r->footprint();
      if (!queue.try_push(r)) std::abort();
    }
    queue.pop_all(popped, std::chrono::milliseconds(0));
    queue.release(bytes, popped.size());
    for (std::size_t i = 0; i < kBatch; ++i) records[i] = std::move(popped[i]);
    popped.clear();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
  queue.close();
}

void record_queue_baseline(benchmark::State& state) {
  std::mutex mu;
  std::deque<RecordPtr> items;
  auto records = make_records();
  std::deque<RecordPtr> popped;
  for (auto _ : state) {
    for (auto& r : records) {
      std::lock_guard lock(mu);
      items.push_back(std::move(r));
    }
    {
      std::lock_guard lock(mu);
      popped.swap(items);
    }
    for (std::size_t i = 0; i < kBatch; ++i) records[i] = std::move(popped[i]);
    popped.clear();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}

}  // namespace

OPHOOK_BENCH_PAIR("record_queue", record_queue_ours, record_queue_baseline);
