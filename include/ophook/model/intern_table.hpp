#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ophook::core {

/// Append-only table of values with dense ids. Reads by id take no lock (the hot path reads op
/// entries on every call); adding takes a mutex and dedupes by key. Entries never move.
/// At most kChunks * kChunkSize entries; beyond that add() returns 0, the reserved "none" id.
template <typename Key, typename Value>
class InternTable {
 public:
  static constexpr std::uint32_t kChunkSize = 1024;
  static constexpr std::uint32_t kChunks = 1024;

  InternTable() { add(Key{}, Value{}); }  // id 0: "none"

  /// The id of `key`, adding `make()` under it on first sight.
  template <typename Make>
  std::uint32_t id_of(const Key& key, Make&& make) {
    std::lock_guard lock(mu_);
    if (auto it = ids_.find(key); it != ids_.end()) return it->second;
    return add(key, make());
  }

  const Value& at(std::uint32_t id) const {
    return chunks_[id / kChunkSize].load(std::memory_order_acquire)[id % kChunkSize];
  }
  std::uint32_t size() const { return size_.load(std::memory_order_acquire); }

  /// Calls f(value) for every entry, under the table's lock (entries may be changed in place).
  template <typename F>
  void for_each(F&& f) {
    std::lock_guard lock(mu_);
    for (std::uint32_t id = 0; id < size_.load(std::memory_order_relaxed); ++id) {
      f(chunks_[id / kChunkSize].load(std::memory_order_relaxed)[id % kChunkSize]);
    }
  }

  /// For fork handlers: the child must not inherit a mutex held by another thread.
  std::mutex& mutex() { return mu_; }

 private:
  std::uint32_t add(const Key& key, Value value) {
    const std::uint32_t id = size_.load(std::memory_order_relaxed);
    if (id >= kChunks * kChunkSize) return 0;
    auto& chunk = chunks_[id / kChunkSize];
    if (chunk.load(std::memory_order_relaxed) == nullptr) {
      owned_.push_back(std::make_unique<Value[]>(kChunkSize));
      chunk.store(owned_.back().get(), std::memory_order_release);
    }
    chunk.load(std::memory_order_relaxed)[id % kChunkSize] = std::move(value);
    ids_.emplace(key, id);
    size_.store(id + 1, std::memory_order_release);
    return id;
  }

  std::mutex mu_;
  std::unordered_map<Key, std::uint32_t> ids_;
  std::array<std::atomic<Value*>, kChunks> chunks_{};
  std::vector<std::unique_ptr<Value[]>> owned_;
  std::atomic<std::uint32_t> size_{0};
};

}  // namespace ophook::core
