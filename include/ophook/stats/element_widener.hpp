#pragma once
#include <cstddef>

namespace ophook::core {

/// Converts `count` packed source elements at `src` into the wider element type the .npy file
/// holds, exactly (every source value, including NaN/Inf and signed zero, is representable in the
/// destination). Pure functions; thread-safe; no Python. torch/float_formats.hpp has one for each
/// of PyTorch's narrow formats.
using ElementWidener = void (*)(std::byte* dst, const std::byte* src, std::size_t count) noexcept;

}  // namespace ophook::core
