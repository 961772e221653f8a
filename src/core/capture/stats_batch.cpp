// StatsBatch and the helper thread that shares its jobs.
#include "ophook/capture/stats_batch.hpp"

#include "ophook/process/fork_handlers.hpp"


#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <thread>

#include "capture/stats_memo.hpp"

namespace ophook::core {

/// The one helper thread of the process, started when the first batch is offered. Never
/// destroyed: at exit it waits on its condition variable, holding nothing. A forked child starts
/// its own (the parent's thread does not exist there).
class StatsHelper {
 public:
  static StatsHelper& get() {
    static auto* helper = new StatsHelper;  // leaked: it must outlive every batch of every thread
    return *helper;
  }

  /// False on a one-CPU machine: the batch then runs everything itself.
  bool offer(StatsBatch& batch) {
    if (!worthwhile_) return false;
    std::lock_guard lock(mutex_);
    if (!running_) {
      running_ = true;
      std::thread([this] { serve(); }).detach();
    }
    batch.queued_ = true;
    queue_.push_back(&batch);
    queued_.fetch_add(1, std::memory_order_relaxed);
    wake_.notify_one();
    return true;
  }

  /// Takes `batch` out of the queue if the helper has not picked it up.
  void withdraw(StatsBatch& batch) {
    std::lock_guard lock(mutex_);
    if (!batch.queued_) return;
    batch.queued_ = false;
    queue_.erase(std::find(queue_.begin(), queue_.end(), &batch));
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }

  /// Returns once the helper no longer looks at `batch`.
  void wait_until_let_go(StatsBatch& batch) {
    std::unique_lock lock(mutex_);
    let_go_.wait(lock, [&] { return !batch.held_by_helper_; });
  }

 private:
  StatsHelper() {
    set_fork_handler(ForkStage::StatsBatch,
                     {[]() noexcept { get().mutex_.lock(); }, []() noexcept { get().mutex_.unlock(); },
                      []() noexcept {
                     auto& helper = get();
                     helper.queue_.clear();  // the batches of threads that do not exist here
                     helper.queued_.store(0, std::memory_order_relaxed);
                     helper.running_ = false;
                     // The parent's helper may have been waiting on these: no thread waits here,
                     // but their state says one does, and the next signal would wait for it
                     // forever (a DataLoader worker hung so). Fresh ones, over the old.
                     new (&helper.wake_) std::condition_variable;
                     new (&helper.let_go_) std::condition_variable;
                     helper.mutex_.unlock();
                      }});
  }

  void serve() {
    for (;;) {
      StatsBatch* batch = nullptr;
      linger();
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        batch = queue_.front();
        queue_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
        batch->queued_ = false;
        batch->held_by_helper_ = true;
      }
      // In order, while the owner takes jobs from the end: they meet in the middle.
      for (std::size_t i = 0; i < batch->jobs_; ++i) batch->try_run(i, true);
      // Under the mutex, and through a condition variable of the helper's own: the owner may
      // destroy the batch the moment it sees it let go.
      std::lock_guard lock(mutex_);
      batch->held_by_helper_ = false;
      let_go_.notify_all();
    }
  }

  /// Polls the queue for a while before sleeping: a program whose calls come every few hundred
  /// microseconds offers the next batch sooner than a sleeping thread wakes up, which it does late
  /// on a busy machine (docs/performance.md, "Figures behind the code"); back-to-back large calls
  /// gain nothing from it.
  void linger() const noexcept {
    const auto until = std::chrono::steady_clock::now() + kLinger;
    while (queued_.load(std::memory_order_relaxed) == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  }

  static constexpr std::chrono::microseconds kLinger{1000};
  const bool worthwhile_ = std::thread::hardware_concurrency() > 1;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable let_go_;
  std::deque<StatsBatch*> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), read without the mutex while lingering
  bool running_ = false;
};

bool StatsBatch::add(std::string_view descr, const std::byte* data, std::size_t nbytes, std::uint32_t index) {
  if (jobs_ == kMaxJobs) return false;
  auto& job = slots_[jobs_++];
  job.descr = descr, job.data = data, job.nbytes = nbytes, job.index = index;
  job.state.store(kOpen, std::memory_order_relaxed);
  finished_ = false;
  return true;
}

bool StatsBatch::try_run(std::size_t i, bool done_by_helper) noexcept {
  auto& job = slots_[i];
  std::uint8_t open = kOpen;
  if (!job.state.compare_exchange_strong(open, kTaken, std::memory_order_acquire)) return false;
  job.stats = remembered_stats(job.descr, job.data, job.nbytes);
  job.state.store(kDone, std::memory_order_release);
  if (done_by_helper) job.state.notify_one();
  return true;
}

void StatsBatch::start() {
  if (jobs_ == 0 || started_) return;
  started_ = StatsHelper::get().offer(*this);
}

void StatsBatch::run_open_jobs() noexcept {
  for (std::size_t i = jobs_; i-- > 0;) try_run(i, false);
}

void StatsBatch::finish() {
  if (finished_) return;
  if (started_) StatsHelper::get().withdraw(*this);
  run_open_jobs();
  for (std::size_t i = 0; i < jobs_; ++i) {
    auto& state = slots_[i].state;
    for (auto seen = state.load(std::memory_order_acquire); seen != kDone; seen = state.load(std::memory_order_acquire)) {
      state.wait(seen, std::memory_order_acquire);
    }
  }
  if (started_) StatsHelper::get().wait_until_let_go(*this);
  started_ = false;
  finished_ = true;
}

}  // namespace ophook::core
