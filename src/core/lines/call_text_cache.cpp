#include "lines/call_text_cache.hpp"

#include <type_traits>

#define XXH_INLINE_ALL  // header-only: libophook_core.so must not depend on libxxhash.so
#include <xxhash.h>

namespace ophook::core {
namespace {

// A call's fixed-size parts, each appended to the key in one piece (no padding: every byte is set).
struct CallKey {
  std::uint32_t op_id, kwargs_offset, outputs_offset, values_size;
};
struct ArrayKey {
  std::uint32_t dtype_id, device_id, no_data_reason_id, ndim;
};
static_assert(std::has_unique_object_representations_v<CallKey> && std::has_unique_object_representations_v<ArrayKey>);

template <typename T>
void put(LineBuffer& key, const T& v) {
  key.append({reinterpret_cast<const char*>(&v), sizeof v});
}

/// The elements' bytes; nothing for none (an empty container's data() may be null, and memcpy
/// from null is undefined even for zero bytes).
template <typename Container>
void put_all(LineBuffer& key, const Container& values) {
  if (values.empty()) return;
  key.append({reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0])});
}

std::size_t entry_bytes(std::string_view key, std::string_view trace_call, std::string_view api_line) {
  constexpr std::size_t kOverhead = 160;  // the map's node and the strings' headers
  return key.size() + trace_call.size() + api_line.size() + kOverhead;
}

}  // namespace

const CallTextCache::Texts* CallTextCache::find(const CallRecord& record) {
  // Each variable-length part carries its length, so that no two calls share a key.
  key_.clear();
  put(key_, CallKey{record.op_id, record.kwargs_offset, record.outputs_offset,
                    static_cast<std::uint32_t>(record.values.size())});
  put_all(key_, record.values);
  for (const auto& array : record.arrays) {
    // Strides, when kept, are as many as the dimensions: a flag in ndim's top bit says so; the
    // Python type takes the three bits below.
    const auto layout_flag = array.strides.empty() ? 0u : 0x8000'0000u;
    const auto type_bits = static_cast<std::uint32_t>(array.python_type) << 28;
    put(key_, ArrayKey{array.dtype_id, array.device_id, array.no_data_reason_id,
                       static_cast<std::uint32_t>(array.shape.size()) | layout_flag | type_bits});
    put_all(key_, array.shape);
    put_all(key_, array.strides);
    put(key_, array.view_of);
    if (array.view_of >= 0) put(key_, array.view_offset);
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
