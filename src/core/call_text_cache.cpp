#include "call_text_cache.hpp"

#define XXH_INLINE_ALL  // header-only: libophook.so must not depend on libxxhash.so
#include <xxhash.h>

#include <cstdint>

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

}  // namespace

std::size_t CallTextCache::KeyHash::operator()(std::string_view key) const noexcept {
  return XXH3_64bits(key.data(), key.size());
}

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
  const auto it = texts_.find(key_.view());
  return it == texts_.end() ? nullptr : &it->second;
}

void CallTextCache::remember(std::string_view trace_call, std::string_view api_line) {
  const auto size = key_.view().size() + trace_call.size() + api_line.size() + kEntryOverhead;
  if (size > kMaxBytes / 16) return;
  if (bytes_ + size > kMaxBytes) texts_.clear(), bytes_ = 0;
  texts_.emplace(std::string(key_.view()), Texts{std::string(trace_call), std::string(api_line)});
  bytes_ += size;
}

}  // namespace ophook::core
