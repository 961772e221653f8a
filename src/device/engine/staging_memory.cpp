#include "device/engine/staging_memory.hpp"

#include "device/driver/backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>

namespace ophook::device {

StagingMemory::StagingMemory(const std::byte* host, std::uint64_t device_address, std::uint64_t size)
    : host_(host), device_address_(device_address), size_(size & ~std::uint64_t{15}), owner_(getpid()) {
  free_.emplace(0, size_);
}

StagingMemory::FreeRanges::iterator StagingMemory::first_fit(std::uint64_t n) {
  return std::find_if(free_.begin(), free_.end(), [n](const auto& range) { return range.second >= n; });
}

StagingMemory::Range StagingMemory::take(std::uint64_t n) {
  n = aligned(n);
  std::uint64_t offset = 0;
  {
    std::lock_guard lock(mutex_);
    const auto it = first_fit(n);
    if (it == free_.end()) return {};
    offset = it->first;
    const std::uint64_t left = it->second - n;
    free_.erase(it);
    if (left > 0) free_.emplace(offset + n, left);
  }
  // The copy's deleter gives the range back, keeping this memory's account alive until it has.
  std::shared_ptr<const std::byte> lent(host_ + offset,
                                        [self = shared_from_this(), offset, n](const std::byte*) { self->give_back(offset, n); });
  return {std::make_shared<const core::SharedCopy>(std::move(lent)), device_address_ + offset};
}

bool StagingMemory::wait_for_room(std::uint64_t n, const std::function<bool()>& more_coming) {
  n = aligned(n);
  std::unique_lock lock(mutex_);
  // A record's copies go back just after the writer counts its bytes out of the queue: one more
  // look once nothing is queued.
  bool last_look = false;
  while (first_fit(n) == free_.end()) {
    if (!more_coming()) {
      if (last_look || stuck_) {
        stuck_ = true;
        return false;
      }
      last_look = true;
    }
    returned_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return true;
}

void StagingMemory::give_back(std::uint64_t offset, std::uint64_t n) noexcept {
  if (getpid() != owner_) return;
  {
    std::lock_guard lock(mutex_);
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + n) {  // merged with the free range after it
      n += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      const auto before = std::prev(next);
      if (before->first + before->second == offset) {  // and with the one before it
        before->second += n;
        n = 0;
      }
    }
    if (n > 0) free_.emplace(offset, n);
    stuck_ = false;
  }
  returned_.notify_all();
}

}  // namespace ophook::device
