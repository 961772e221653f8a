#include "ophook/record_queue.hpp"

namespace ophook::core {

RecordQueue::RecordQueue(std::size_t cap_bytes) : cap_(cap_bytes) {}

bool RecordQueue::try_push(RecordPtr& record) {
  const auto bytes = record->footprint();
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (held_ != 0 && held_ + bytes > cap_) return false;
    held_ += bytes;
    ++pushed_;
    items_.push_back(std::move(record));
    wake = held_ > cap_ / 2;
  }
  if (wake) writer_cv_.notify_one();
  return true;
}

void RecordQueue::push(RecordPtr record) {
  const auto bytes = record->footprint();
  std::unique_lock lock(mu_);
  if (held_ != 0 && held_ + bytes > cap_) {
    ++waits_;
    urgent_ = true;
    writer_cv_.notify_one();
    room_cv_.wait(lock, [&] { return held_ == 0 || held_ + bytes <= cap_; });
  }
  held_ += bytes;
  ++pushed_;
  items_.push_back(std::move(record));
}

bool RecordQueue::pop_all(std::deque<RecordPtr>& out, std::chrono::milliseconds poll) {
  std::unique_lock lock(mu_);
  if (items_.empty() && !closed_ && !urgent_) writer_cv_.wait_for(lock, poll);
  urgent_ = false;
  out.swap(items_);
  return !(closed_ && out.empty());
}

void RecordQueue::release(std::size_t bytes, std::uint64_t records) {
  {
    std::lock_guard lock(mu_);
    held_ -= bytes;
    released_ += records;
  }
  room_cv_.notify_all();
}

void RecordQueue::wait_drained() {
  std::unique_lock lock(mu_);
  const auto target = pushed_;
  urgent_ = true;
  writer_cv_.notify_one();
  room_cv_.wait(lock, [&] { return released_ >= target || closed_; });
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
  std::lock_guard lock(mu_);
  return held_;
}

std::uint64_t RecordQueue::producer_waits() const {
  std::lock_guard lock(mu_);
  return waits_;
}

}  // namespace ophook::core
