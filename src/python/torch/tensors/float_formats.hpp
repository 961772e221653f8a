#pragma once
#include <cstddef>
#include <cstdint>

#include "ophook/stats/element_widener.hpp"

namespace ophook::py {

using core::ElementWidener;

/// Widening of each of PyTorch's narrow float formats, by torch dtype name ("bfloat16",
/// "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu" → float32;
/// "complex32" → complex64). nullptr for any other name.
ElementWidener widener_for(const char* torch_dtype_name) noexcept;

/// The float32 value of one IEEE half (binary16), exactly. Exposed for the complex32 widener and tests.
float half_to_float(std::uint16_t h) noexcept;

}  // namespace ophook::py
