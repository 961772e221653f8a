#include "files/file_threads.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace ophook::core {
namespace {

constexpr int kHelperNiceness = 10;  // a nice-10 thread gets about a tenth of a nice-0 one's share
constexpr unsigned kMostHelpers = 7;

}  // namespace

unsigned FileThreads::default_helpers(std::uint64_t asked) noexcept {
  if (asked != TestSettings::kAutomatic) return static_cast<unsigned>(std::min<std::uint64_t>(asked, kMostHelpers));
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  // The CPUs this process may use (taskset, a container's cpuset), not the machine's.
  const int usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 2;
  return std::clamp(static_cast<unsigned>(usable) / 2, 1U, kMostHelpers);
}

void FileThreads::run_batch(std::size_t count, bool share, Trampoline call, void* context) noexcept {
  if (count == 0) return;
  call_ = call;
  context_ = context;
  count_ = count;
  next_job_.store(0, std::memory_order_relaxed);
  const std::size_t helpers = share ? start_helpers(std::min<std::size_t>(count - 1, max_helpers_)) : 0;
  if (helpers == 0) {
    take_jobs();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    seats_ = helpers;
    done_ = 0;
  }
  for (std::size_t i = 0; i < helpers; ++i) wake_.notify_one();
  take_jobs();
  std::unique_lock lock(mutex_);
  // Every seated helper is waited for, even when this thread ran the last job: the batch's jobs
  // are the caller's and go away when run() returns.
  finished_.wait(lock, [&] { return seats_ == 0 && done_ == helpers; });
}

std::size_t FileThreads::start_helpers(std::size_t wanted) noexcept {
  while (helpers_.size() < wanted && helpers_.size() < max_helpers_) {
    try {
      helpers_.emplace_back([this] { helper_loop(); });
    } catch (const std::system_error&) {
      max_helpers_ = static_cast<unsigned>(helpers_.size());  // no more threads to be had: work with these
    }
  }
  return std::min(wanted, helpers_.size());
}

void FileThreads::take_jobs() noexcept {
  for (;;) {
    const auto i = next_job_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count_) return;
    call_(context_, i);
  }
}

void FileThreads::helper_loop() noexcept {
  // Idle time only: at a lower priority (Linux keeps a nice value per thread) a helper gives way
  // to the program's threads while they run, and still has a core to itself while the program
  // waits for the writer or has finished. Best effort: an error changes nothing else.
  errno = 0;
  if (const int nice = ::getpriority(PRIO_PROCESS, 0); errno == 0) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), std::min(nice + kHelperNiceness, 19));
  }
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return quit_ || seats_ > 0; });
      if (quit_) return;
      --seats_;
    }
    take_jobs();
    {
      std::lock_guard lock(mutex_);
      ++done_;
    }
    finished_.notify_one();
  }
}

void FileThreads::stop() noexcept {
  if (helpers_.empty()) return;
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  for (auto& helper : helpers_) helper.join();
  helpers_.clear();
  max_helpers_ = 0;
}

void FileThreads::abandon_after_fork() noexcept {
  for (auto& helper : helpers_) helper.detach();
  helpers_.clear();
  max_helpers_ = 0;
}

}  // namespace ophook::core
