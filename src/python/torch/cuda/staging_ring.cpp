#include "torch/cuda/staging_ring.hpp"

#include "torch/cuda/backend.hpp"

namespace ophook::py::device_statistics {

std::uint64_t StagingRing::take(std::uint64_t n) {
  n = (n + 15) & ~std::uint64_t{15};
  while (!ranges_.empty() && ranges_.front().released) ranges_.pop_front();
  if (ranges_.empty()) head_ = 0;
  const std::uint64_t tail = ranges_.empty() ? kStagingBytes : ranges_.front().begin;
  std::uint64_t begin = kNotStaged;
  if (ranges_.empty() || head_ > tail) {
    if (head_ + n <= kStagingBytes) {
      begin = head_;
    } else if (!ranges_.empty() && n < tail) {
      begin = 0;  // wrap round, short of the oldest range
    }
  } else if (head_ + n < tail) {
    begin = head_;
  }
  if (begin == kNotStaged) return kNotStaged;
  ranges_.push_back({begin, n, false});
  head_ = begin + n;
  return begin;
}

void StagingRing::release(std::uint64_t begin) {
  for (auto& range : ranges_) {
    if (range.begin == begin && !range.released) {
      range.released = true;
      break;
    }
  }
  while (!ranges_.empty() && ranges_.front().released) ranges_.pop_front();
}

}  // namespace ophook::py::device_statistics
