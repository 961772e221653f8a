#include "ophook/capture/capture_buffer_pool.hpp"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace ophook::core {
namespace {

std::mutex pool_mu;
std::vector<SpareBuffer> idle;       // oldest first; a handful of entries at most in practice
std::atomic<std::size_t> idle_total{0};  // read without the mutex by idle_bytes() and trim()
std::size_t limit = 0;

/// Moves idle buffers out (oldest first) until at most `keep_bytes` in at most `keep_count` buffers
/// stay; the caller frees them after unlocking (freeing megabytes is an munmap).
std::vector<SpareBuffer> evict_locked(std::size_t keep_bytes, std::size_t keep_count = CaptureBufferPool::kMaxIdle) {
  std::vector<SpareBuffer> evicted;
  std::size_t total = idle_total.load(std::memory_order_relaxed);
  std::size_t n = 0;
  while (n < idle.size() && (total > keep_bytes || idle.size() - n > keep_count)) total -= idle[n++].capacity;
  evicted.reserve(n);
  std::move(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(n), std::back_inserter(evicted));
  idle.erase(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(n));
  idle_total.store(total, std::memory_order_relaxed);
  return evicted;
}

}  // namespace

SpareBuffer CaptureBufferPool::take(std::size_t bytes) {
  if (bytes < kMinBytes || idle_total.load(std::memory_order_relaxed) < bytes) return {};
  std::lock_guard lock(pool_mu);
  const std::size_t most = bytes + bytes / 8;
  auto best = idle.end();
  for (auto it = idle.begin(); it != idle.end(); ++it) {
    if (it->capacity >= bytes && it->capacity <= most && (best == idle.end() || it->capacity < best->capacity)) best = it;
  }
  if (best == idle.end()) return {};
  SpareBuffer spare = std::move(*best);
  idle.erase(best);
  idle_total.fetch_sub(spare.capacity, std::memory_order_relaxed);
  return spare;
}

void CaptureBufferPool::give(std::unique_ptr<std::byte[]> data, std::size_t capacity) noexcept {
  if (!data || capacity < kMinBytes) return;  // freed here
  std::vector<SpareBuffer> evicted;
  {
    std::lock_guard lock(pool_mu);
    if (capacity > limit) return;  // freed here, after the unlock
    try {
      evicted = evict_locked(limit - capacity, kMaxIdle - 1);
      idle.push_back({std::move(data), capacity});
      idle_total.fetch_add(capacity, std::memory_order_relaxed);
    } catch (const std::bad_alloc&) {
      return;  // the buffer is freed: nothing is lost but a reuse
    }
  }
}

void CaptureBufferPool::trim(std::size_t keep_bytes) noexcept {
  if (idle_total.load(std::memory_order_relaxed) <= keep_bytes) return;
  std::vector<SpareBuffer> evicted;
  std::lock_guard lock(pool_mu);
  try {
    evicted = evict_locked(keep_bytes);
  } catch (const std::bad_alloc&) {
    idle.clear();
    idle_total.store(0, std::memory_order_relaxed);
  }
}

void CaptureBufferPool::set_limit(std::size_t bytes) noexcept {
  {
    std::lock_guard lock(pool_mu);
    limit = bytes;
  }
  trim(bytes);
}

std::size_t CaptureBufferPool::idle_bytes() noexcept { return idle_total.load(std::memory_order_relaxed); }

void CaptureBufferPool::lock_for_fork() noexcept { pool_mu.lock(); }

void CaptureBufferPool::unlock_after_fork() noexcept { pool_mu.unlock(); }

}  // namespace ophook::core
