#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "array_outcome.hpp"
#include "ophook/output_dir.hpp"

namespace ophook::core {

/// True for errors that concern one file name only (a name too long, a directory or a planted
/// file in the way): that file is skipped and the others go on. Anything else is a failure of the
/// medium (disk full, size limit, read-only, permission).
bool error_concerns_one_file(int error) noexcept;

/// One .npy file of a batch: named by its outcome, made of `header` and the record's bytes. With
/// `same_as` set, the file is not written: that earlier file is linked under the name if it holds
/// the same bytes (OutputDir::link_copy), and `link` says how that went.
struct FileJob {
  ArrayOutcome* outcome = nullptr;
  std::string header;
  std::span<const std::byte> data;
  IoResult result;
  bool attempted = false;  // false: the batch stopped at a failure of the medium before this file
  std::string same_as;
  OutputDir::LinkResult link;
};

/// Writes a batch of small files on the calling thread and one helper thread at once. A small
/// file costs the kernel (an inode, a directory entry) far more than it costs us, and two threads
/// creating files in one directory got through 1.2-1.7x as many per second as one on a quiet ext4
/// here, 2-2.7x right after deletions (README, "Dump files on two threads"). The first failure of
/// the medium stops the batch: the files not yet begun stay unattempted.
/// write_all is called by one thread (the writer) at a time.
class FileBatchWriter {
 public:
  /// `helper`: whether a helper thread may be started (at the first batch of two files or more,
  /// by the thread that calls write_all, whose signal mask it inherits).
  FileBatchWriter(OutputDir& dir, bool helper) : dir_(dir), helper_allowed_(helper) {}
  ~FileBatchWriter() { stop(); }
  FileBatchWriter(const FileBatchWriter&) = delete;
  FileBatchWriter& operator=(const FileBatchWriter&) = delete;

  /// Returns once every job is written or left unattempted.
  void write_all(std::span<FileJob> jobs) noexcept;

  /// Ends the helper thread; write_all works alone from then on.
  void stop() noexcept;

  /// For the child after fork(): the helper does not exist there; forget it without joining.
  void abandon_after_fork() noexcept;

 private:
  bool helper_running() noexcept;
  void take_jobs() noexcept;  // writes jobs_ until none is left or the medium failed
  void helper_loop() noexcept;

  OutputDir& dir_;
  bool helper_allowed_;
  std::thread helper_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::span<FileJob> jobs_;  // the current batch; set and cleared under mutex_
  std::atomic<std::size_t> next_job_{0};
  std::atomic<bool> medium_failed_{false};
  std::uint64_t batch_ = 0, helper_done_batch_ = 0;
  bool quit_ = false;
};

}  // namespace ophook::core
