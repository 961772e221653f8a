#include "call_text_cache.hpp"

#define XXH_INLINE_ALL  // header-only: libophook.so must not depend on libxxhash.so
#include <xxhash.h>

namespace ophook::core {
namespace {

template <typename T>
void put(LineBuffer& key, T v) {
  key.append({reinterpret_cast<const char*>(&v), sizeof v});
}

void put_bytes(LineBuffer& key, const void* data, std::size_t size) {
  put(key, static_cast<std::uint32_t>(size));
  key.append({static_cast<const char*>(data), size});
}

std::size_t entry_bytes(std::string_view key, std::string_view trace_call, std::string_view api_line) {
  constexpr std::size_t kOverhead = 160;  // the map's node and the strings' headers
  return key.size() + trace_call.size() + api_line.size() + kOverhead;
}

}  // namespace

const CallTextCache::Texts* CallTextCache::find(const CallRecord& record) {
  // Each variable-length part carries its length, so that no two calls share a key.
  key_.clear();
  put(key_, record.op_id);
  put(key_, record.kwargs_offset);
  put(key_, record.outputs_offset);
  put_bytes(key_, record.values.data(), record.values.size());
  for (const auto& array : record.arrays) {
    put(key_, array.dtype_id);
    put(key_, array.device_id);
    put(key_, array.no_data_reason_id);
    put_bytes(key_, array.shape.data(), array.shape.size() * sizeof(std::int64_t));
  }
  const auto key = key_.view();
  hash_ = XXH3_64bits(key.data(), key.size());
  const auto it = entries_.find(hash_);
  return it != entries_.end() && it->second.key == key ? &it->second.texts : nullptr;
}

void CallTextCache::remember(std::string_view trace_call, std::string_view api_line) {
  auto& sighting = seen_once_[hash_ % kSightings];
  if (sighting != hash_) {
    sighting = hash_;
    return;
  }
  const auto size = entry_bytes(key_.view(), trace_call, api_line);
  if (size > kMaxBytes / 16) return;
  if (bytes_ + size > kMaxBytes) entries_.clear(), bytes_ = 0;
  auto [it, fresh] = entries_.try_emplace(hash_);
  auto& entry = it->second;
  if (!fresh) bytes_ -= entry_bytes(entry.key, entry.texts.trace_call, entry.texts.api_line);  // a hash collision
  entry = Entry{std::string(key_.view()), Texts{std::string(trace_call), std::string(api_line)}};
  bytes_ += size;
}

}  // namespace ophook::core
