#include "ophook/model/record_queue.hpp"

#include <algorithm>
#include <utility>

#include "ophook/capture/capture_buffer_pool.hpp"
#include "ophook/model/record_pool.hpp"

namespace ophook::core {
namespace {
// The writer subtracts released bytes in batches of this many records (and always before it
// waits), so that producers do not take a cache miss on held_ for every record written.
constexpr std::uint64_t kReleaseBatch = 64;
}  // namespace

RecordQueue::RecordQueue(std::size_t cap_bytes) : cap_(cap_bytes) {}

RecordQueue::~RecordQueue() {
  // Records pushed after close() (late calls at exit) were never popped.
  for (CallRecord* r = chain_.exchange(nullptr); r != nullptr;) delete std::exchange(r, r->next_in_chain);
}

bool RecordQueue::fits(std::size_t bytes) const {
  const auto held = held_.load();
  return held == 0 || held + bytes <= cap_;
}

bool RecordQueue::has_room(std::size_t bytes) const {
  if (!fits(bytes)) return false;
  const auto busy = held_.load() + bytes;
  CaptureBufferPool::trim(busy < cap_ ? cap_ - busy : 0);
  return true;
}

void RecordQueue::link(RecordPtr record, std::size_t bytes) {
  record->queued_bytes = bytes;
  const auto before = held_.fetch_add(bytes, std::memory_order_relaxed);
  pushed_.fetch_add(1, std::memory_order_relaxed);
  CallRecord* node = record.release();
  CallRecord* head = chain_.load(std::memory_order_relaxed);
  do {
    node->next_in_chain = head;
  } while (!chain_.compare_exchange_weak(head, node, std::memory_order_release, std::memory_order_relaxed));
  if (before <= cap_ / 2 && before + bytes > cap_ / 2) wake_writer();
}

bool RecordQueue::try_push(RecordPtr& record) {
  const auto bytes = record->footprint();
  if (!fits(bytes)) return false;
  link(std::move(record), bytes);
  return true;
}

void RecordQueue::push(RecordPtr record) {
  // The record's memory exists already: queueing it takes nothing from the idle buffers.
  const auto bytes = record->footprint();
  if (!fits(bytes)) wait_until_fits(bytes);
  link(std::move(record), bytes);
}

void RecordQueue::wait_for_room(std::size_t bytes) {
  if (has_room(bytes)) return;
  wait_until_fits(bytes);
  (void)has_room(bytes);  // the idle buffers' share, freed outside the queue's lock
}

void RecordQueue::wait_until_fits(std::size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  ++waits_.count;
  urgent_ = true;
  writer_cv_.notify_one();
  waiting_.fetch_add(1);
  room_waiting_.fetch_add(1);
  room_cv_.wait(lock, [&] { return fits(bytes) || closed_; });
  room_waiting_.fetch_sub(1);
  waiting_.fetch_sub(1);
  waits_.ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

bool RecordQueue::pop_all(std::deque<RecordPtr>& out, std::chrono::milliseconds poll) {
  publish_released();
  bool closed;
  {
    std::unique_lock lock(mu_);
    if (chain_.load(std::memory_order_acquire) == nullptr && !closed_ && !urgent_) writer_cv_.wait_for(lock, poll);
    urgent_ = false;
    closed = closed_;
  }
  // The chain is newest first: appending at the front of `out` restores push order.
  const auto first = out.size();
  for (CallRecord* r = chain_.exchange(nullptr, std::memory_order_acquire); r != nullptr;) {
    CallRecord* next = std::exchange(r->next_in_chain, nullptr);
    out.emplace_back(r);
    r = next;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  return !(closed && out.empty());
}

void RecordQueue::release(RecordPtr record) {
  const auto bytes = record->queued_bytes;
  RecordPool::give(std::move(record));
  release(bytes, 1);
}

void RecordQueue::release(std::size_t bytes, std::uint64_t records) {
  unpublished_bytes_ += bytes;
  unpublished_records_ += records;
  // A producer waiting for room may need this very record's bytes; a flusher only the whole batch,
  // which pop_all publishes (waking it per record cost a futex round trip per record written).
  if (unpublished_records_ >= kReleaseBatch || room_waiting_.load() > 0) publish_released();
}

void RecordQueue::publish_released() {
  if (unpublished_records_ == 0) return;
  held_.fetch_sub(std::exchange(unpublished_bytes_, 0));
  released_.fetch_add(std::exchange(unpublished_records_, 0));
  if (waiting_.load() > 0) {
    std::lock_guard lock(mu_);  // a waiter between its check and its sleep must not miss this
    room_cv_.notify_all();
  }
}

void RecordQueue::wait_drained() {
  const auto target = pushed_.load();
  std::unique_lock lock(mu_);
  urgent_ = true;
  writer_cv_.notify_one();
  waiting_.fetch_add(1);
  room_cv_.wait(lock, [&] { return released_.load() >= target || closed_; });
  waiting_.fetch_sub(1);
}

void RecordQueue::wake_writer() {
  {
    std::lock_guard lock(mu_);
    urgent_ = true;
  }
  writer_cv_.notify_one();
}

void RecordQueue::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  writer_cv_.notify_one();
  room_cv_.notify_all();
}

std::size_t RecordQueue::bytes_held() const {
  return held_.load();
}

RecordQueue::ProducerWaits RecordQueue::producer_waits() const {
  std::lock_guard lock(mu_);
  return waits_;
}

}  // namespace ophook::core
