#pragma once
#include <cstdint>
#include <deque>

/// Where `dump`'s bytes wait in the host memory the device writes (Backend::staging): ranges
/// taken as tensors are queued and released as their records complete.
namespace ophook::py::device_statistics {

inline constexpr std::uint64_t kNotStaged = ~std::uint64_t{0};

/// The staging memory's ranges in use, oldest first: a ring, since records complete in about
/// the order their tensors were queued.
class StagingRing {
 public:
  /// An offset for `n` bytes (16-byte aligned), or kNotStaged when the ring has no room for them.
  std::uint64_t take(std::uint64_t n);

  /// The range taken at `begin` is free again (once those before it are).
  void release(std::uint64_t begin);

 private:
  struct Range {
    std::uint64_t begin, size;
    bool released;
  };
  std::deque<Range> ranges_;
  std::uint64_t head_ = 0;
};

}  // namespace ophook::py::device_statistics
