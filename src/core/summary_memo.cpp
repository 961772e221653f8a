#include "summary_memo.hpp"

#include <pthread.h>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "float_blocks.hpp"

namespace ophook::core {
namespace {

struct Remembered {
  std::string descr;
  std::size_t nbytes = 0;
  ArrayStats stats;
  std::vector<std::uint64_t> block_hashes;  // empty: not hashed (misses_in_a_row)
  // Summaries at this address since statistics were last given back there (set to 0 then).
  mutable std::atomic<std::uint32_t> misses_in_a_row{0};
};

// Hashing an array's blocks costs its summary nearly a third more in the cache and up to three
// quarters more from memory (stats.cpp's BlockHasher): at an address whose content changes
// at every summary (an operand the program writes before each call, a buffer reused for new
// content) they are hashed only for the first summaries and then one in kRetryEvery, so that
// content which changes stops paying for it and content that settles is remembered again.
constexpr std::uint32_t kMissesHashed = 2;
constexpr std::uint32_t kRetryEvery = 16;

/// Whether the `nbytes` at `data` hash block by block as `remembered`'s did.
bool same_content(const Remembered& remembered, const std::byte* data, std::size_t nbytes) noexcept {
  for (std::size_t i = 0, at = 0; at < nbytes; ++i, at += kContentBlockBytes) {
    const std::size_t n = std::min(kContentBlockBytes, nbytes - at);
    if (float_blocks::content_hash(data + at, n) != remembered.block_hashes[i]) return false;
  }
  return true;
}

/// The arrays summarised last, by address, the most recently used first.
class SummaryMemo {
 public:
  static SummaryMemo& get() {
    static auto* memo = new SummaryMemo;  // leaked: the summary helper thread may use it at exit
    return *memo;
  }

  /// What was summarised last at `data`, if the memo still has it.
  std::shared_ptr<const Remembered> find(const std::byte* data) {
    std::lock_guard lock(mutex_);
    const auto found = by_address_.find(data);
    if (found == by_address_.end()) return nullptr;
    used_.splice(used_.begin(), used_, found->second);
    return found->second->second;
  }

  void keep(const std::byte* data, std::shared_ptr<const Remembered> remembered) {
    if (remembered->block_hashes.size() > kMaxBlockHashes) return;
    std::lock_guard lock(mutex_);
    if (const auto found = by_address_.find(data); found != by_address_.end()) forget(found->second);
    block_hashes_ += remembered->block_hashes.size();
    used_.emplace_front(data, std::move(remembered));
    by_address_[data] = used_.begin();
    while (used_.size() > kMaxArrays || block_hashes_ > kMaxBlockHashes) forget(std::prev(used_.end()));
  }

  std::atomic<std::uint64_t> computed{0}, remembered{0};

 private:
  using Used = std::list<std::pair<const std::byte*, std::shared_ptr<const Remembered>>>;

  SummaryMemo() {
    // A fork while another thread holds the mutex would leave it held in the child for good.
    pthread_atfork([] { get().mutex_.lock(); }, [] { get().mutex_.unlock(); }, [] { get().mutex_.unlock(); });
  }

  void forget(Used::iterator at) {
    block_hashes_ -= at->second->block_hashes.size();
    by_address_.erase(at->first);
    used_.erase(at);
  }

  static constexpr std::size_t kMaxArrays = 4096;
  static constexpr std::size_t kMaxBlockHashes = std::size_t{1} << 19;
  std::mutex mutex_;
  Used used_;
  std::unordered_map<const std::byte*, Used::iterator> by_address_;
  std::size_t block_hashes_ = 0;
};

}  // namespace

ArrayStats remembered_stats(std::string_view descr, const std::byte* data, std::size_t nbytes) {
  if (data == nullptr || nbytes < kContentBlockBytes) return compute_stats(descr, data, nbytes);  // not worth it
  auto& memo = SummaryMemo::get();
  std::uint32_t misses = 0;
  if (const auto known = memo.find(data)) {
    if (known->nbytes == nbytes && known->descr == descr && !known->block_hashes.empty() &&
        same_content(*known, data, nbytes)) {
      known->misses_in_a_row.store(0, std::memory_order_relaxed);
      memo.remembered.fetch_add(1, std::memory_order_relaxed);
      return known->stats;
    }
    misses = known->misses_in_a_row.load(std::memory_order_relaxed) + 1;
  }
  auto fresh = std::make_shared<Remembered>();
  fresh->descr = descr;
  fresh->nbytes = nbytes;
  fresh->misses_in_a_row.store(misses, std::memory_order_relaxed);
  if (misses < kMissesHashed || misses % kRetryEvery == 0) fresh->block_hashes.resize(content_block_count(nbytes));
  fresh->stats = compute_stats(descr, data, nbytes, fresh->block_hashes.empty() ? nullptr : fresh->block_hashes.data());
  memo.computed.fetch_add(1, std::memory_order_relaxed);
  const ArrayStats stats = fresh->stats;
  memo.keep(data, std::move(fresh));
  return stats;
}

SummaryMemoCounts summary_memo_counts() noexcept {
  auto& memo = SummaryMemo::get();
  return {memo.computed.load(std::memory_order_relaxed), memo.remembered.load(std::memory_order_relaxed)};
}

}  // namespace ophook::core
