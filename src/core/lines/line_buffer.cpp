#include "lines/line_buffer.hpp"

#include <algorithm>

namespace ophook::core {

void LineBuffer::grow(std::size_t more) {
  const auto capacity = std::max(2 * capacity_, size_ + more);
  std::unique_ptr<char[]> data(new char[capacity]);
  std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

}  // namespace ophook::core
