#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace ophook::py {

/// Map from an object's address to a heap-allocated value, for the lookup every hooked call makes
/// (trampoline → its patched entry). Open addressing over a power-of-two array with a
/// multiplicative hash: one multiply, one shift and usually one probe, where std::unordered_map
/// pays an integer division and a node chase. Values never move (callers may keep a pointer
/// across a call that patches more objects). Not thread-safe: used under the GIL.
template <typename Value>
class PointerTable {
 public:
  Value* find(const void* key) const noexcept {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = index_of(key);; i = (i + 1) & mask()) {
      const auto& slot = slots_[i];
      if (slot.key == key) return slot.value;
      if (slot.key == nullptr) return nullptr;
    }
  }
  bool contains(const void* key) const noexcept { return find(key) != nullptr; }

  /// Adds `value` under `key` (which must not be present yet); returns the stored value.
  Value& insert(const void* key, Value value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    owned_.push_back(std::make_unique<Value>(std::move(value)));
    place(key, owned_.back().get());
    ++count_;
    return *owned_.back();
  }

  /// Calls f(key, value) for every entry.
  template <typename F>
  void for_each(F&& f) {
    for (auto& slot : slots_) {
      if (slot.key != nullptr) f(slot.key, *slot.value);
    }
  }
  std::size_t size() const noexcept { return count_; }
  void clear() noexcept { slots_.clear(), owned_.clear(), count_ = 0, shift_ = 64; }

 private:
  struct Slot {
    const void* key = nullptr;
    Value* value = nullptr;
  };
  std::size_t mask() const noexcept { return slots_.size() - 1; }
  std::size_t index_of(const void* key) const noexcept {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void place(const void* key, Value* value) {
    std::size_t i = index_of(key);
    while (slots_[i].key != nullptr) i = (i + 1) & mask();
    slots_[i] = {key, value};
  }
  void grow() {
    auto old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    shift_ = 64;
    for (auto n = slots_.size(); n > 1; n >>= 1) --shift_;
    for (const auto& slot : old) {
      if (slot.key != nullptr) place(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Value>> owned_;
  std::size_t count_ = 0;
  int shift_ = 64;
};

}  // namespace ophook::py
