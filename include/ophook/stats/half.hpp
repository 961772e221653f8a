#pragma once
#include <cstdint>
#include <cstring>

namespace ophook::core {

/// IEEE binary16 (numpy float16) → double, exactly, by bit manipulation. Neither _Float16 will do:
/// GCC without -mf16c converts through a libgcc soft-float call per element (about 50 times
/// slower), and clang 14 on x86-64 does not have the type at all.
inline double half_to_double(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // Inf, NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 → 127
  } else {
    const double magnitude = static_cast<double>(mantissa) * 0x1p-24;  // zero and subnormals
    return sign != 0 ? -magnitude : magnitude;
  }
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace ophook::core
