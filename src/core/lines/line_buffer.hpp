#pragma once
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace ophook::core {

/// A growable text buffer whose appends are inlined capacity checks. The writer thread builds each
/// trace line from dozens of short pieces, and fmt::memory_buffer's push_back and try_resize stayed
/// calls (GCC did not inline them: an `np.add` line took 850 more instructions). Not thread-safe.
class LineBuffer {
 public:
  using value_type = char;  // for std::back_inserter

  LineBuffer() : data_(new char[kInitialCapacity]), capacity_(kInitialCapacity) {}

  // Always inlined (GCC would not at -O2): a literal's length is then a constant, and the copy a
  // few moves instead of a libc call.
  [[gnu::always_inline]] void push_back(char c) {
    if (size_ == capacity_) grow(1);
    data_[size_++] = c;
  }
  [[gnu::always_inline]] void append(std::string_view text) {
    if (capacity_ - size_ < text.size()) grow(text.size());
    std::memcpy(data_.get() + size_, text.data(), text.size());
    size_ += text.size();
  }
  void clear() noexcept { size_ = 0; }
  std::string_view view() const noexcept { return {data_.get(), size_}; }

 private:
  static constexpr std::size_t kInitialCapacity = 1024;

  /// Room for `more` bytes past the end (out of line: rare once a few lines have been written).
  void grow(std::size_t more);

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_;
};

}  // namespace ophook::core
