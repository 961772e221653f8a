#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "ophook/config/config.hpp"

namespace ophook::core {

/// The threads that make dump mode's files: the writer thread, which hands out a batch of
/// independent jobs (an array's digest, statistics or file), and helper threads that take jobs of
/// the same batch at once. Page-cache writes scale with files, not with threads on one file
/// (docs/performance.md: one thread 3.5 GiB/s, two on two files 6.6 GiB/s, two on one file 3.2),
/// and a small file costs the kernel (an inode, a directory entry) far more than it costs us, so
/// different arrays' files are made on different threads. Helpers run at a lower priority and are
/// started as batches come to need them, by the thread that calls run(), whose signal mask they
/// inherit (the writer blocks every signal: a write past RLIMIT_FSIZE fails with EFBIG instead of
/// raising SIGXFSZ). run() is called by one thread (the writer) at a time.
class FileThreads {
 public:
  /// `max_helpers`: how many helper threads may be started (0: the calling thread alone).
  explicit FileThreads(unsigned max_helpers) : max_helpers_(max_helpers) {}
  ~FileThreads() { stop(); }
  FileThreads(const FileThreads&) = delete;
  FileThreads& operator=(const FileThreads&) = delete;

  /// The helpers a writer gets: `asked` (OPHOOK_TEST_FILE_HELPERS, for the benchmarks' rows that set
  /// other counts beside the default on one machine; at most seven), else half the CPUs this
  /// process may run on, at least one (with two CPUs the writer and one helper), at most seven.
  static unsigned default_helpers(std::uint64_t asked = TestSettings::kAutomatic) noexcept;

  /// Runs job(i) for every i below `count` on this thread and up to `count - 1` helpers (none when
  /// `share` is false: work too small to be worth waking a thread for), and returns once every job
  /// has run. `job` must not throw.
  template <typename Job>
  void run(std::size_t count, Job&& job, bool share = true) noexcept {
    run_batch(count, share, [](void* context, std::size_t i) { (*static_cast<Job*>(context))(i); },
              const_cast<void*>(static_cast<const void*>(&job)));
  }

  /// Ends the helper threads; run() works alone from then on.
  void stop() noexcept;
  /// For the child after fork(): the helpers do not exist there; forget them without joining.
  void abandon_after_fork() noexcept;

 private:
  using Trampoline = void (*)(void* context, std::size_t i);
  void run_batch(std::size_t count, bool share, Trampoline call, void* context) noexcept;
  /// Starts helpers until `wanted` run (or no more may); returns how many run.
  std::size_t start_helpers(std::size_t wanted) noexcept;
  void take_jobs() noexcept;  // runs jobs of the current batch until none is left
  void helper_loop() noexcept;

  unsigned max_helpers_;
  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  // The current batch: set before seats_ are offered, under mutex_.
  Trampoline call_ = nullptr;
  void* context_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_job_{0};
  std::size_t seats_ = 0;  // helpers still wanted for the current batch
  std::size_t done_ = 0;   // helpers of the current batch that ran out of jobs
  bool quit_ = false;
};

}  // namespace ophook::core
