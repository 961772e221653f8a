#include "ophook/capture/copy_memo.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "capture/content_memo.hpp"

namespace ophook::core {
namespace {

/// Equal bytes make an equal copy whatever the dtype: the size is the only key.
struct AnyDtype {
  bool operator==(const AnyDtype&) const = default;
};
/// The copy, while records hold it, and the device's fingerprint of its bytes where a device
/// staged them.
struct RememberedCopy {
  std::weak_ptr<const SharedCopy> copy;
  std::optional<StagedFingerprint> fingerprint;
};
using CopyMemo = ContentMemo<AnyDtype, RememberedCopy, ForkStage::CopyMemo>;
std::atomic<std::uint64_t> copied{0}, shared{0};

/// Gives `out` the `nbytes` of `copy` (the bytes it captures, known equal), `spare` going back.
void share_copy(ArrayCapture& out, std::shared_ptr<const SharedCopy> copy, std::size_t nbytes, SpareBuffer spare) {
  CaptureBufferPool::give(std::move(spare.data), spare.capacity);
  shared.fetch_add(1, std::memory_order_relaxed);
  out.captured = true;
  out.shared = std::move(copy);
  out.nbytes = nbytes;
}

}  // namespace

void copy_or_share(ArrayCapture& out, const void* address, const std::byte* bytes, std::size_t nbytes,
                   SpareBuffer spare) {
  out.captured = true;
  if (nbytes < kSharedCopyMinBytes) {
    std::memcpy(out.reserve_data(nbytes, std::move(spare)), bytes, nbytes);
    return;
  }
  auto& memo = CopyMemo::get();
  std::uint32_t misses = 0;
  const auto known = memo.find_same(address, bytes, nbytes, AnyDtype{}, misses);
  if (known) {
    if (auto copy = known->payload.copy.lock()) return share_copy(out, std::move(copy), nbytes, std::move(spare));
  }
  std::byte* dst = out.reserve_data(nbytes, std::move(spare));
  std::memcpy(dst, bytes, nbytes);
  copied.fetch_add(1, std::memory_order_relaxed);
  auto entry = std::make_shared<CopyMemo::Entry>();
  entry->nbytes = nbytes;
  entry->misses_in_a_row.store(misses, std::memory_order_relaxed);
  // Hashed from the copy, still in the cache: what it holds, whatever `bytes` hold by now. Bytes
  // found equal to a copy since let go are hashed too, so that a write during the copy is seen.
  if (known || CopyMemo::should_hash(misses)) {
    entry->block_hashes.resize(content_block_count(nbytes));
    for (std::size_t i = 0; i < entry->block_hashes.size(); ++i) entry->block_hashes[i] = content_block_hash(dst, nbytes, i);
  }
  if (!entry->block_hashes.empty()) {
    auto copy = std::make_shared<const SharedCopy>(std::move(out.data), std::exchange(out.data_capacity, 0));
    entry->payload.copy = copy;
    out.shared = std::move(copy);
  }
  memo.keep(address, std::move(entry));
}

void share_staged_copy(ArrayCapture& out, const void* address, std::shared_ptr<const SharedCopy> copy,
                       std::size_t nbytes, const StagedFingerprint& fingerprint) {
  if (address != nullptr) {
    auto& memo = CopyMemo::get();
    // A read the device found unchanged since an earlier one still in flight has that one's copy.
    if (const auto known = memo.last_at(address); known && known->payload.copy.lock() == copy) {
      return share_copy(out, std::move(copy), nbytes, {});
    }
    // No block hashes: the device compares the next read at the address with the fingerprint.
    auto entry = std::make_shared<CopyMemo::Entry>();
    entry->nbytes = nbytes;
    entry->payload = {copy, fingerprint};
    memo.keep(address, std::move(entry));
  }
  copied.fetch_add(1, std::memory_order_relaxed);
  out.captured = true;
  out.nbytes = nbytes;
  out.shared = std::move(copy);
}

HeldCopy held_copy(const void* address, std::size_t nbytes) {
  const auto known = CopyMemo::get().last_at(address);
  if (!known || known->nbytes != nbytes || !known->payload.fingerprint) return {};
  return {known->payload.copy.lock(), *known->payload.fingerprint};
}

void share_held_copy(ArrayCapture& out, const void* address, std::shared_ptr<const SharedCopy> copy,
                     std::size_t nbytes, SpareBuffer spare) {
  // The device's comparison is a hit at the address, as find_same's is: content that settles keeps
  // its block hashes (and so its held copy) however often it changes in between.
  if (const auto known = CopyMemo::get().last_at(address); known && known->payload.copy.lock() == copy) {
    known->misses_in_a_row.store(0, std::memory_order_relaxed);
  }
  share_copy(out, std::move(copy), nbytes, std::move(spare));
}

void forget_copies() { CopyMemo::get().forget_all(); }

CopyMemoCounts copy_memo_counts() noexcept {
  return {copied.load(std::memory_order_relaxed), shared.load(std::memory_order_relaxed)};
}

}  // namespace ophook::core
