#include "files/content_index.hpp"

#define XXH_INLINE_ALL  // header-only: libophook_core.so must not depend on libxxhash.so
#include <xxhash.h>

namespace ophook::core {

ContentDigest xxh3_128_digest(std::span<const std::span<const std::byte>> parts) noexcept {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  for (const auto& part : parts) XXH3_128bits_update(&state, part.data(), part.size());
  const XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return {hash.low64, hash.high64};
}

std::size_t ContentIndex::cost(const std::string& file) noexcept {
  // A hash node with its key, entry and bucket, plus the age queue's element: what an entry
  // holds besides the name's own bytes beyond the short-string buffer.
  constexpr std::size_t kFixed = sizeof(ContentDigest) + sizeof(Entry) + 3 * sizeof(void*) +
                                 sizeof(std::pair<ContentDigest, std::uint64_t>);
  return kFixed + (file.capacity() > 15 ? file.capacity() + 1 : 0);
}

const ContentIndex::First* ContentIndex::find(const ContentDigest& digest) const {
  const auto it = files_.find(digest);
  return it == files_.end() ? nullptr : &it->second.first;
}

void ContentIndex::remember(const ContentDigest& digest, const std::string& file,
                            const std::optional<ArrayStats>& stats) {
  auto [it, fresh] = files_.try_emplace(digest);
  if (!fresh) bytes_ -= cost(it->second.first.file);
  it->second.first = {file, stats};
  it->second.order = next_order_++;
  bytes_ += cost(it->second.first.file);
  ages_.emplace_back(digest, it->second.order);
  if (ages_.size() > 2 * files_.size() + 64) {
    // Replaced and forgotten entries left stale elements behind: drop them, so that the queue
    // stays within twice the live entries.
    std::erase_if(ages_, [&](const auto& age) {
      const auto live = files_.find(age.first);
      return live == files_.end() || live->second.order != age.second;
    });
  }
  while (bytes_ > max_bytes_ && !ages_.empty()) {
    const auto [oldest, order] = ages_.front();
    ages_.pop_front();
    const auto old = files_.find(oldest);
    if (old == files_.end() || old->second.order != order) continue;  // replaced or forgotten since
    bytes_ -= cost(old->second.first.file);
    files_.erase(old);
    ++forgotten_;
  }
}

void ContentIndex::add_stats(const ContentDigest& digest, const std::string& file, const ArrayStats& stats) noexcept {
  const auto it = files_.find(digest);
  if (it != files_.end() && it->second.first.file == file) it->second.first.stats = stats;
}

void ContentIndex::forget(const ContentDigest& digest, const std::string& file) {
  const auto it = files_.find(digest);
  if (it == files_.end() || it->second.first.file != file) return;
  bytes_ -= cost(it->second.first.file);
  files_.erase(it);  // its age queue element goes stale
}

}  // namespace ophook::core
