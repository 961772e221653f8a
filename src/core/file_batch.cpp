#include "file_batch.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace ophook::core {
namespace {

constexpr int kHelperNiceness = 10;  // a nice-10 thread gets about a tenth of a nice-0 one's share

}  // namespace

bool error_concerns_one_file(int error) noexcept {
  return error == ENAMETOOLONG || error == EINVAL || error == EEXIST || error == EISDIR ||
         error == ENOTEMPTY || error == ELOOP;
}

void FileBatchWriter::write_all(std::span<FileJob> jobs) noexcept {
  if (jobs.empty()) return;
  medium_failed_.store(false, std::memory_order_relaxed);
  next_job_.store(0, std::memory_order_relaxed);
  if (jobs.size() < 2 || !helper_running()) {
    jobs_ = jobs;
    take_jobs();
    jobs_ = {};
    return;
  }
  std::uint64_t batch;
  {
    std::lock_guard lock(mutex_);
    jobs_ = jobs;
    batch = ++batch_;
  }
  wake_.notify_one();
  take_jobs();
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return helper_done_batch_ == batch; });
  jobs_ = {};
}

bool FileBatchWriter::helper_running() noexcept {
  if (helper_.joinable()) return true;
  if (!helper_allowed_) return false;
  helper_allowed_ = false;  // one attempt: without a thread to be had, the writer works alone
  try {
    helper_ = std::thread([this] { helper_loop(); });
  } catch (const std::system_error&) {
    return false;
  }
  return true;
}

void FileBatchWriter::take_jobs() noexcept {
  for (;;) {
    const auto i = next_job_.fetch_add(1, std::memory_order_relaxed);
    if (i >= jobs_.size() || medium_failed_.load(std::memory_order_relaxed)) return;
    auto& job = jobs_[i];
    const std::span<const std::byte> parts[] = {
        {reinterpret_cast<const std::byte*>(job.header.data()), job.header.size()}, job.data};
    job.attempted = true;
    if (!job.same_as.empty()) {
      job.link = dir_.link_copy(job.same_as, job.outcome->file, parts);
      continue;  // not linked: the caller writes the file instead
    }
    job.result = dir_.write_file(job.outcome->file, parts);
    if (!job.result.ok && !error_concerns_one_file(job.result.error)) {
      medium_failed_.store(true, std::memory_order_relaxed);
    }
  }
}

void FileBatchWriter::helper_loop() noexcept {
  // Idle time only: at a lower priority (Linux keeps a nice value per thread) the helper gives
  // way to the program's threads while they run, and still has a core to itself while the
  // program waits for the writer or has finished. Best effort: an error changes nothing else.
  errno = 0;
  if (const int nice = ::getpriority(PRIO_PROCESS, 0); errno == 0) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), std::min(nice + kHelperNiceness, 19));
  }
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return quit_ || batch_ != seen; });
      if (quit_) return;
      seen = batch_;
    }
    take_jobs();
    {
      std::lock_guard lock(mutex_);
      helper_done_batch_ = seen;
    }
    finished_.notify_one();
  }
}

void FileBatchWriter::stop() noexcept {
  if (!helper_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_one();
  helper_.join();
}

void FileBatchWriter::abandon_after_fork() noexcept {
  if (helper_.joinable()) helper_.detach();
}

}  // namespace ophook::core
