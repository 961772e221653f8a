#pragma once
// What was made from the bytes of large arrays (their statistics, a copy), remembered by where
// they lie and given again only to the same content: the one memo behind stats_memo.cpp and
// copy_memo.cpp.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ophook/process/fork_handlers.hpp"
#include "ophook/stats/stats.hpp"
#include "stats/float_blocks.hpp"

namespace ophook::core {

/// The XXH3 of the `i`-th kContentBlockBytes of the `nbytes` at `data` (the last block may be
/// short): what an entry's block_hashes hold.
inline std::uint64_t content_block_hash(const std::byte* data, std::size_t nbytes, std::size_t i) noexcept {
  const std::size_t at = i * kContentBlockBytes;
  return float_blocks::content_hash(data + at, std::min(kContentBlockBytes, nbytes - at));
}

/// One array's entry: what was made from its bytes (`payload`), under `key` (what else must match:
/// its dtype), with the XXH3 of each kContentBlockBytes of those bytes.
template <class Key, class Payload>
struct RememberedContent {
  Key key{};
  std::size_t nbytes = 0;
  Payload payload{};
  std::vector<std::uint64_t> block_hashes;  // empty: not hashed (misses_in_a_row)
  // Times something was made at this address since it was last given back there (0 then).
  mutable std::atomic<std::uint32_t> misses_in_a_row{0};
};

/// The arrays seen last, by address, the most recently used first. A program reads most large
/// arrays more than once unchanged — a weight in the forward, the backward and the optimizer; an
/// activation as one op's output and the next op's input; the same operands call after call — and
/// telling their content unchanged (XXH3) costs a fraction of reading them for statistics or
/// copying them (docs/performance.md, "Figures behind the code"). The content decides, not the address or a version
/// counter, so a write no call records (through `.data`, a NumPy view, DLPack, C code) is seen as a
/// change. Equal hashes of unequal blocks (2^-64 per block) would give back what was made from other
/// bytes: as likely as two arrays' XXH64 digests being equal, which `ophook compare` already takes
/// as equal bytes.
///
/// Bounded: the 4096 arrays used last, holding at most 2^19 block hashes (4 MiB) between them.
/// Thread-safe; one memo per (Key, Payload), for the life of the process. A forked child starts
/// with none of its parent's entries (`Stage`: its place in the fork handlers' list): those of a
/// copy belong to records the child never writes, and a copy's statistics mutex may have been held
/// by the parent's writer at the fork.
template <class Key, class Payload, ForkStage Stage>
class ContentMemo {
 public:
  using Entry = RememberedContent<Key, Payload>;

  static ContentMemo& get() {
    static auto* memo = new ContentMemo;  // leaked: helper threads may use it at exit
    return *memo;
  }

  /// What was made last from the array at `address`, if the memo still has it and the `nbytes` at
  /// `data` (the array's bytes: at `address` itself for a host array; elsewhere for a device
  /// tensor's, staged in host memory) under `key` hash block by block as they did then (the first
  /// block that differs ends the check: memory reused for new content costs one block). Otherwise
  /// nullptr, with the misses at that address in `misses` for should_hash().
  /// `key` is anything Key compares equal with (a std::string_view for a std::string key: no copy).
  template <class KeyLike>
  std::shared_ptr<const Entry> find_same(const void* address, const std::byte* data, std::size_t nbytes,
                                         const KeyLike& key, std::uint32_t& misses) {
    misses = 0;
    std::shared_ptr<const Entry> known;
    {
      std::lock_guard lock(mutex_);
      const auto found = by_address_.find(address);
      if (found == by_address_.end()) return nullptr;
      used_.splice(used_.begin(), used_, found->second);
      known = found->second->second;
    }
    if (known->nbytes == nbytes && known->key == key && !known->block_hashes.empty() &&
        same_content(*known, data, nbytes)) {
      known->misses_in_a_row.store(0, std::memory_order_relaxed);
      return known;
    }
    misses = known->misses_in_a_row.load(std::memory_order_relaxed) + 1;
    return nullptr;
  }

  /// What was made last from the array at `address`, whatever its bytes are now (the caller has
  /// another way to tell): for a device tensor whose device compares them.
  std::shared_ptr<const Entry> last_at(const void* address) {
    std::lock_guard lock(mutex_);
    const auto found = by_address_.find(address);
    if (found == by_address_.end()) return nullptr;
    used_.splice(used_.begin(), used_, found->second);
    return found->second->second;
  }

  /// Whether to hash the blocks of what is made at an address after `misses` misses there. Hashing
  /// costs a summary nearly a third more in the cache and up to three quarters more from memory
  /// (stats.cpp's BlockHasher): where the content changes every time (an operand the program writes
  /// before each call, a buffer reused for new content) blocks are hashed only the first times and
  /// then one in kRetryEvery, so that content which changes stops paying for it and content that
  /// settles is remembered again.
  static bool should_hash(std::uint32_t misses) noexcept { return misses < kMissesHashed || misses % kRetryEvery == 0; }

  /// Keeps `entry` (its block_hashes filled, or empty) as what was made last from the array at
  /// `address`.
  void keep(const void* address, std::shared_ptr<const Entry> entry) {
    if (entry->block_hashes.size() > kMaxBlockHashes) return;
    std::lock_guard lock(mutex_);
    if (const auto found = by_address_.find(address); found != by_address_.end()) forget(found->second);
    block_hashes_ += entry->block_hashes.size();
    used_.emplace_front(address, std::move(entry));
    by_address_[address] = used_.begin();
    while (used_.size() > kMaxArrays || block_hashes_ > kMaxBlockHashes) forget(std::prev(used_.end()));
  }

  /// Forgets every entry.
  void forget_all() {
    std::lock_guard lock(mutex_);
    used_.clear();
    by_address_.clear();
    block_hashes_ = 0;
  }

 private:
  using Used = std::list<std::pair<const void*, std::shared_ptr<const Entry>>>;

  ContentMemo() {
    // A fork while another thread holds the mutex would leave it held in the child for good.
    set_fork_handler(Stage, {[]() noexcept { get().mutex_.lock(); }, []() noexcept { get().mutex_.unlock(); },
                             []() noexcept {
                               auto& memo = get();
                               memo.mutex_.unlock();
                               memo.used_.clear();
                               memo.by_address_.clear();
                               memo.block_hashes_ = 0;
                             }});
  }

  static bool same_content(const Entry& known, const std::byte* data, std::size_t nbytes) noexcept {
    for (std::size_t i = 0; i < known.block_hashes.size(); ++i) {
      if (content_block_hash(data, nbytes, i) != known.block_hashes[i]) return false;
    }
    return true;
  }

  void forget(typename Used::iterator at) {
    block_hashes_ -= at->second->block_hashes.size();
    by_address_.erase(at->first);
    used_.erase(at);
  }

  static constexpr std::uint32_t kMissesHashed = 2;
  static constexpr std::uint32_t kRetryEvery = 16;
  static constexpr std::size_t kMaxArrays = 4096;
  static constexpr std::size_t kMaxBlockHashes = std::size_t{1} << 19;
  std::mutex mutex_;
  Used used_;
  std::unordered_map<const void*, typename Used::iterator> by_address_;
  std::size_t block_hashes_ = 0;
};

}  // namespace ophook::core
