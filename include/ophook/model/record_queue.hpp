#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "ophook/model/record.hpp"

namespace ophook::core {

/// Bounded hand-off between the program's threads and the writer thread, capped by bytes held
/// (CallRecord::footprint) rather than by count. A full queue makes producers wait: nothing is
/// dropped. A record larger than the whole cap is admitted once the queue is empty (the capture
/// side keeps arrays larger than the cap out of records, see src/python/numpy/arrays.cpp).
/// A push is lock-free: one CAS on an intrusive chain and one atomic add of the bytes, no mutex,
/// no allocation. The writer is not woken per record (a futex wake per call would cost more than
/// the record): it polls every few milliseconds, and a producer wakes it when the queue crosses
/// half full. The mutex is only taken when a producer must wait, to wake, and by the writer.
/// Thread-safe.
class RecordQueue {
 public:
  explicit RecordQueue(std::size_t cap_bytes);
  ~RecordQueue();
  RecordQueue(const RecordQueue&) = delete;
  RecordQueue& operator=(const RecordQueue&) = delete;

  /// Enqueues without waiting; false (record untouched) when it would exceed the cap.
  bool try_push(RecordPtr& record);
  /// Enqueues, waiting for room. Call without holding the GIL.
  void push(RecordPtr record);

  /// Whether `bytes` more would fit beside what is queued now (always, when nothing is). When they
  /// do, idle capture buffers that would take the total over the cap are freed first
  /// (CaptureBufferPool): what the capturing side is about to copy then fits in fresh memory too.
  bool has_room(std::size_t bytes) const;
  /// Waits until has_room(bytes). The capturing side calls it before copying an array, with the
  /// bytes its record would then hold, so that captured data not yet written stays under the cap
  /// instead of reaching the cap plus one record. Call without holding the GIL.
  void wait_for_room(std::size_t bytes);

  /// Writer side: waits up to `poll` for records (or a flush/close request) and moves them all,
  /// in push order, into `out`. Returns false once closed and drained.
  bool pop_all(std::deque<RecordPtr>& out, std::chrono::milliseconds poll);
  /// Writer side: `record` is done; frees its bytes from the cap and recycles it (RecordPool).
  void release(RecordPtr record);
  /// Writer side, for records disposed of elsewhere: frees `bytes` and counts `records` done.
  void release(std::size_t bytes, std::uint64_t records);

  /// Blocks until every record pushed before the call has been released by the writer.
  void wait_drained();
  /// Wakes the writer at once (a flush is wanted).
  void wake_writer();
  /// No more records will come; pop_all returns false after the last batch.
  void close();

  std::size_t bytes_held() const;

  /// How often, and how long in all, producers waited for room: the program's time lost to a
  /// writer that could not keep up (the disk, in `dump`).
  struct ProducerWaits {
    std::uint64_t count = 0, ns = 0;
  };
  ProducerWaits producer_waits() const;

 private:
  bool fits(std::size_t bytes) const;
  void wait_until_fits(std::size_t bytes);
  void link(RecordPtr record, std::size_t bytes);
  void publish_released();

  const std::size_t cap_;
  // Producer side (one cache line written per push).
  alignas(64) std::atomic<CallRecord*> chain_{nullptr};  // newest first
  std::atomic<std::size_t> held_{0};                      // bytes queued or being written
  std::atomic<std::uint64_t> pushed_{0};
  // Writer side.
  alignas(64) std::atomic<std::uint64_t> released_{0};
  std::size_t unpublished_bytes_ = 0;  // released by the writer, not yet subtracted from held_
  std::uint64_t unpublished_records_ = 0;
  // Waiting (rare): producers for room, the writer for work, flushers for the drain.
  mutable std::mutex mu_;
  std::condition_variable writer_cv_;
  std::condition_variable room_cv_;
  std::atomic<int> waiting_{0};  // producers or flushers blocked on room_cv_
  std::atomic<int> room_waiting_{0};  // of which producers
  ProducerWaits waits_;
  bool urgent_ = false;
  bool closed_ = false;
};

}  // namespace ophook::core
