#include "torch/cuda/device_ring.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "ophook/log.hpp"
#include "torch/cuda/backend.hpp"

namespace ophook::py::device_statistics {

std::optional<DeviceRing::Place> DeviceRing::take(std::uint64_t raw_bytes, std::uint64_t count, ElementWidener widen,
                                                  std::uint64_t launch,
                                                  const std::function<Overwrite(std::uint64_t)>& may_overwrite,
                                                  bool& not_yet) {
  not_yet = false;
  const std::uint64_t n = (raw_bytes + 255) & ~std::uint64_t{255};  // whole lines for the kernel's stores
  if (n > capacity_ / 2) return std::nullopt;
  const std::lock_guard lock(mutex_);
  // The entries lie in the order they were taken, round the ring: the oldest, at the front, are
  // the next ones past the head. Those the room overwrites are a run of them from the front (with
  // the ring's end when the room goes back to its start).
  const bool wraps = head_ + n > capacity_;
  const std::uint64_t begin = wraps ? 0 : head_;
  std::size_t victims = 0;
  while (wraps && victims < entries_.size() && entries_[victims].begin >= head_) ++victims;
  while (victims < entries_.size() && entries_[victims].begin < begin + n &&
         begin < entries_[victims].begin + entries_[victims].bytes) {
    ++victims;
  }
  for (std::size_t i = 0; i < victims; ++i) {
    const Overwrite answer = may_overwrite(entries_[i].launch);
    if (answer == Overwrite::Yes) continue;
    not_yet = answer == Overwrite::NotYet;
    return std::nullopt;
  }
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(victims));
  entries_.push_back({next_ticket_, begin, n, raw_bytes, count, launch, widen});
  head_ = begin + n;
  return Place{next_ticket_++, base_ + begin};
}

bool DeviceRing::fetch(std::uint64_t ticket, std::byte* dst, std::size_t saved_bytes) noexcept {
  const std::lock_guard lock(mutex_);
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), ticket,
                                   [](const Entry& e, std::uint64_t t) { return e.ticket < t; });
  if (it == entries_.end() || it->ticket != ticket) return false;  // overwritten
  const Entry& entry = *it;
  std::unique_ptr<std::byte[]> packed;  // a narrow format's bytes, widened into `dst` once here
  if (entry.widen != nullptr) packed.reset(new (std::nothrow) std::byte[entry.raw_bytes]);
  const bool buffer_ok = entry.widen != nullptr ? packed != nullptr : saved_bytes == entry.raw_bytes;
  if (!buffer_ok || !backend_.copy_to_host(packed ? packed.get() : dst, base_ + entry.begin, entry.raw_bytes)) {
    if (buffer_ok && !std::exchange(copy_failed_, true)) {
      core::log_error("could not copy the ring's bytes from the device: those arrays get no file, and say why");
    }
    return false;
  }
  if (entry.widen != nullptr) entry.widen(dst, packed.get(), entry.count);
  return true;
}

}  // namespace ophook::py::device_statistics
