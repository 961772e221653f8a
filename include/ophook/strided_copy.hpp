#pragma once
#include "ophook/export.hpp"
#include <cstddef>
#include <cstdint>
#include <span>

namespace ophook::core {

/// Elements of an array of `shape` (1 for a 0-d array).
inline std::size_t element_count(std::span<const std::int64_t> shape) noexcept {
  std::size_t count = 1;
  for (auto n : shape) count *= static_cast<std::size_t>(n);
  return count;
}

/// Copies an n-dimensional strided array (strides in bytes, any sign, zero for broadcast
/// dimensions) into `dst` in C order. `dst` must hold product(shape) * item_size bytes.
/// Contiguous inner runs are copied with memcpy. A destination of 4 MiB or more is first advised
/// onto transparent huge pages (madvise), the copy being what faults it in. Thread-safe.
OPHOOK_API void strided_copy(std::byte* dst, const std::byte* src, std::span<const std::int64_t> shape,
                  std::span<const std::int64_t> strides, std::size_t item_size) noexcept;

}  // namespace ophook::core
