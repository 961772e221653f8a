#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ophook/export.hpp"
#include "ophook/stats/stats.hpp"

namespace ophook::core {

/// Statistics of a call's arrays read where they lie (`stats` mode), shared between the thread
/// recording the call and one helper thread, so that large arrays cost the call about half the
/// time: the helper starts on the inputs while the call runs (when the call cannot write into
/// them), and both threads share the outputs. An array is one job, statistics and digest in one
/// pass over its memory (splitting the two between the threads would read it twice), or given
/// back for content summarised before (stats_memo.hpp).
///
/// Used by one thread (the recording one), which must call finish() (or let the destructor do
/// it) before the arrays' memory may change or go away: after finish() the helper holds nothing
/// of the batch. Without a helper (one CPU) every job runs on the recording thread.
class StatsBatch {
 public:
  /// Arrays smaller than this are not worth handing over (a few microseconds of work): the caller
  /// summarises them itself. 64 KiB takes in a compiled model's activations (Inductor's kernels
  /// run for tens of microseconds, time the helper spends on their inputs); docs/performance.md
  /// ("Figures behind the code") compares it with 256 KiB.
  static constexpr std::size_t kSharedBytes = std::size_t{64} << 10;

  StatsBatch() = default;
  ~StatsBatch() { finish(); }
  StatsBatch(const StatsBatch&) = delete;
  StatsBatch& operator=(const StatsBatch&) = delete;

  /// Adds array `index`'s job; false when the batch is full (the caller summarises it
  /// itself). `descr` must outlive the batch (the recorder's interned dtype). Before start() only.
  OPHOOK_API bool add(std::string_view descr, const std::byte* data, std::size_t nbytes, std::uint32_t index);
  bool empty() const noexcept { return jobs_ == 0; }

  /// Offers the jobs to the helper thread, which may begin at once.
  OPHOOK_API void start();
  /// Runs every job the helper has not taken, on this thread.
  OPHOOK_API void run_open_jobs() noexcept;
  /// Runs what is left, then waits for the helper's jobs; afterwards results are ready. Idempotent.
  OPHOOK_API void finish();

  /// After finish(): calls f(index, stats) for each array added.
  template <typename F>
  void for_each_result(F&& f) const {
    for (std::size_t i = 0; i < jobs_; ++i) f(slots_[i].index, slots_[i].stats);
  }

 private:
  friend class StatsHelper;
  enum State : std::uint8_t { kOpen, kTaken, kDone };
  struct Job {
    std::string_view descr;
    const std::byte* data = nullptr;
    std::size_t nbytes = 0;
    std::uint32_t index = 0;
    ArrayStats stats;
    std::atomic<std::uint8_t> state{kOpen};
  };
  /// Runs job `i` if no thread has taken it; `done_by_helper` wakes a waiting owner.
  bool try_run(std::size_t i, bool done_by_helper) noexcept;

  static constexpr std::size_t kMaxJobs = 16;
  std::array<Job, kMaxJobs> slots_;
  std::size_t jobs_ = 0;
  bool started_ = false;  // offered to the helper
  bool finished_ = false;
  // Guarded by the helper's mutex:
  bool queued_ = false;          // waits in the helper's queue
  bool held_by_helper_ = false;  // the helper is running its jobs
};

}  // namespace ophook::core
