#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "ophook/record.hpp"

namespace ophook::core {

/// Bounded hand-off between the program's threads and the writer thread, capped by bytes held
/// (CallRecord::footprint) rather than by count. A full queue makes producers wait: nothing is
/// dropped. A record larger than the whole cap is admitted once the queue is empty.
/// The writer is not woken per record (a futex wake per call would cost more than the record):
/// it polls every few milliseconds, and producers wake it only when the queue is half full.
/// Thread-safe.
class RecordQueue {
 public:
  explicit RecordQueue(std::size_t cap_bytes);

  /// Enqueues without waiting; false (record untouched) when it would exceed the cap.
  bool try_push(RecordPtr& record);
  /// Enqueues, waiting for room. Call without holding the GIL.
  void push(RecordPtr record);

  /// Writer side: waits up to `poll` for records (or a flush/close request) and moves them all
  /// into `out`. Returns false once closed and drained.
  bool pop_all(std::deque<RecordPtr>& out, std::chrono::milliseconds poll);
  /// Writer side: the popped records are done; frees their bytes and wakes waiting producers.
  void release(std::size_t bytes, std::uint64_t records);

  /// Blocks until every record pushed before the call has been released by the writer.
  void wait_drained();
  /// Wakes the writer at once (a flush is wanted).
  void wake_writer();
  /// No more records will come; pop_all returns false after the last batch.
  void close();

  std::size_t bytes_held() const;
  std::uint64_t producer_waits() const;

 private:
  const std::size_t cap_;
  mutable std::mutex mu_;
  std::condition_variable writer_cv_;
  std::condition_variable room_cv_;
  std::deque<RecordPtr> items_;
  std::size_t held_ = 0;  // bytes queued or being written
  std::uint64_t pushed_ = 0;
  std::uint64_t released_ = 0;
  std::uint64_t waits_ = 0;
  bool urgent_ = false;
  bool closed_ = false;
};

}  // namespace ophook::core
