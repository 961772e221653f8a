#pragma once
#include "ophook/export.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ophook::core {

/// Elements of an array of `shape` (1 for a 0-d array).
inline std::size_t element_count(std::span<const std::int64_t> shape) noexcept {
  std::size_t count = 1;
  for (auto n : shape) count *= static_cast<std::size_t>(n);
  return count;
}

/// Whether an array of `shape` with these strides (in elements) lies in C order: its bytes, from
/// its data pointer, are its values as a C-order copy would hold them (an array without elements
/// counts as in C order). Sizes of 1 take any stride. Pure.
OPHOOK_API bool is_c_order(std::span<const std::int64_t> shape, std::span<const std::int64_t> strides) noexcept;

/// When the distinct elements of an array of `shape` with these strides (in elements) fill one
/// block that starts at its data pointer - in C order or any other order of its dimensions (a
/// transposed matrix), each element repeated along any broadcast (stride 0) dimension - the number
/// of elements in that block; else nullopt (a gap between elements, a negative stride, overlap).
/// Whatever is true of every element of the block (no NaN in it) is true of the array. Pure.
OPHOOK_API std::optional<std::size_t> one_block_elements(std::span<const std::int64_t> shape,
                                                         std::span<const std::int64_t> strides) noexcept;

/// Copies an n-dimensional strided array (strides in bytes, any sign, zero for broadcast
/// dimensions) into `dst` in C order. `dst` must hold product(shape) * item_size bytes.
/// Contiguous inner runs are copied with memcpy. A destination of 4 MiB or more is first advised
/// onto transparent huge pages (madvise), the copy being what faults it in. Thread-safe.
OPHOOK_API void strided_copy(std::byte* dst, const std::byte* src, std::span<const std::int64_t> shape,
                  std::span<const std::int64_t> strides, std::size_t item_size) noexcept;

}  // namespace ophook::core
