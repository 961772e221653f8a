#pragma once
#include <cstddef>
#include <cstdint>

namespace ophook::py {

/// Converts `count` packed source elements at `src` into the wider element type the .npy file
/// holds, exactly (every source value, including NaN/Inf and signed zero, is representable in the
/// destination). Pure functions; thread-safe; no Python.
using ElementWidener = void (*)(std::byte* dst, const std::byte* src, std::size_t count) noexcept;

/// Widening of each of PyTorch's narrow float formats, by torch dtype name ("bfloat16",
/// "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu" → float32;
/// "complex32" → complex64). nullptr for any other name.
ElementWidener widener_for(const char* torch_dtype_name) noexcept;

/// The float32 value of one IEEE half (binary16), exactly. Exposed for the complex32 widener and tests.
float half_to_float(std::uint16_t h) noexcept;

}  // namespace ophook::py
