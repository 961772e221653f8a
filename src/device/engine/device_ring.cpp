#include "device/engine/device_ring.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "device/driver/backend.hpp"
#include "ophook/log.hpp"

namespace ophook::device {

std::optional<DeviceRing::Place> DeviceRing::take(std::uint64_t raw_bytes, std::uint64_t count, core::ElementWidener widen,
                                                  std::uint64_t launch,
                                                  const std::function<Overwrite(std::uint64_t)>& may_overwrite) {
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
    if (may_overwrite(entries_[i].launch) == Overwrite::Never) return std::nullopt;
  }
  Entry entry{next_ticket_, begin, n, raw_bytes, count, launch, widen};
  entry.head_before = head_;
  for (std::size_t i = 0; i < victims; ++i) {
    const Entry& victim = entries_[i];
    const bool has_bytes = !victim.settled || victim.copied == statistics_kernel::kCopiedAll;
    if (!has_bytes) continue;
    kept_.push_back(victim);
    if (entry.first_kept == 0) entry.first_kept = victim.ticket;
    entry.last_kept = victim.ticket;
  }
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(victims));
  entries_.push_back(entry);
  head_ = begin + n;
  return Place{next_ticket_++, base_ + begin};
}

DeviceRing::Entry* DeviceRing::find(std::uint64_t ticket) {
  const Entry key{.ticket = ticket};
  for (auto* entries : {&entries_, &kept_}) {
    const auto it = std::lower_bound(entries->begin(), entries->end(), key, by_ticket);
    if (it != entries->end() && it->ticket == ticket) return &*it;
  }
  return nullptr;
}

bool DeviceRing::left_uncopied(const Entry& kept) const {
  const auto copied = [](const Entry& e) { return !e.settled || e.copied != statistics_kernel::kCopiedNone; };
  for (const Entry& e : kept_) {
    if (e.ticket > kept.ticket && e.overlaps(kept) && copied(e)) return false;
  }
  // entries_ lie in two runs, each in the order of their places: those past the head (the
  // oldest), then those before it. In each, the ones over `kept` are a run found by its place.
  const auto past_head = std::partition_point(entries_.begin(), entries_.end(),
                                              [&](const Entry& e) { return e.begin >= head_; });
  for (const auto& [first, last] : {std::pair{entries_.begin(), past_head}, std::pair{past_head, entries_.end()}}) {
    auto it = std::partition_point(first, last, [&](const Entry& e) { return e.begin + e.bytes <= kept.begin; });
    for (; it != last && it->begin < kept.begin + kept.bytes; ++it) {
      if (copied(*it)) return false;
    }
  }
  return true;
}

bool DeviceRing::settle(std::uint64_t ticket, statistics_kernel::RingCopy copied) {
  const std::lock_guard lock(mutex_);
  return settle_locked(ticket, copied);
}

void DeviceRing::withdraw(std::uint64_t ticket) {
  const std::lock_guard lock(mutex_);
  settle_locked(ticket, statistics_kernel::kCopiedNone);  // what its room took over stays under it
  if (entries_.empty() || entries_.back().ticket != ticket) return;
  head_ = entries_.back().head_before;
  entries_.pop_back();
}

bool DeviceRing::settle_locked(std::uint64_t ticket, statistics_kernel::RingCopy copied) {
  Entry* entry = find(ticket);
  if (entry == nullptr || entry->settled) return false;
  entry->settled = true, entry->copied = copied;
  const Entry over = *entry;
  const Entry first{.ticket = over.first_kept}, last{.ticket = over.last_kept};
  const auto from = std::lower_bound(kept_.begin(), kept_.end(), first, by_ticket);
  const auto to = std::upper_bound(from, kept_.end(), last, by_ticket);
  // Marked, not erased: erasing from the middle of kept_ moved its thousands of entries each time
  // behind a GPU far behind.
  if (copied == statistics_kernel::kCopiedNone) {
    for (auto it = from; it != to; ++it) {  // those it kept aside stay under it
      if (!it->gone && !std::exchange(it->under_uncopied, true)) ++survivors_;
    }
  } else if (survivors_ == 0) {
    for (auto it = from; it != to; ++it) mark_gone(*it);  // under its room, nothing else is kept aside
  } else {
    for (Entry& e : kept_) {
      if (e.ticket < over.ticket && e.overlaps(over)) mark_gone(e);
    }
  }
  return true;
}

void DeviceRing::mark_gone(Entry& kept) {
  if (std::exchange(kept.gone, true)) return;
  if (kept.under_uncopied) --survivors_;
}

void DeviceRing::forget_overwritten() {
  const std::lock_guard lock(mutex_);
  while (!kept_.empty() && kept_.front().gone) kept_.pop_front();
}

bool DeviceRing::fetch(std::uint64_t ticket, std::byte* dst, std::size_t saved_bytes) noexcept {
  const std::lock_guard lock(mutex_);
  const Entry* found = find(ticket);
  if (found == nullptr || found->gone || !found->settled || found->copied != statistics_kernel::kCopiedAll) return false;
  const Entry& entry = *found;
  if (!std::binary_search(entries_.begin(), entries_.end(), entry, by_ticket) && !left_uncopied(entry)) return false;
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

}  // namespace ophook::device
