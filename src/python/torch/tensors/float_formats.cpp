#include "torch/tensors/float_formats.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

namespace ophook::py {
namespace {

/// How a float8 format spends its top exponent: IEEE (Inf and NaNs, e5m2), FN (only the all-ones
/// pattern is NaN, no Inf: e4m3fn), FNUZ (0x80 is the only NaN; no Inf, no negative zero).
enum class Specials { Ieee, Fn, Fnuz };

struct Float8Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Specials specials;
};

float decode_float8(std::uint8_t byte, const Float8Format& f) noexcept {
  const int exp_max = (1 << f.exponent_bits) - 1;
  const int man_max = (1 << f.mantissa_bits) - 1;
  const bool negative = (byte & 0x80) != 0;
  const int e = (byte >> f.mantissa_bits) & exp_max;
  const int m = byte & man_max;
  const float nan = std::copysign(std::numeric_limits<float>::quiet_NaN(), negative ? -1.0f : 1.0f);
  switch (f.specials) {
    case Specials::Ieee:
      if (e == exp_max) return m == 0 ? (negative ? -INFINITY : INFINITY) : nan;
      break;
    case Specials::Fn:
      if (e == exp_max && m == man_max) return nan;
      break;
    case Specials::Fnuz:
      if (byte == 0x80) return std::numeric_limits<float>::quiet_NaN();
      break;
  }
  // Every float8 value is a small integer times a power of two: ldexp is exact in float32.
  const float magnitude = e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.mantissa_bits)
                                 : std::ldexp(static_cast<float>((1 << f.mantissa_bits) | m), e - f.bias - f.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

using Table = std::array<float, 256>;

template <int E, int M, int Bias, Specials S>
const Table& float8_table() noexcept {
  static const Table table = [] {
    Table t{};
    for (int b = 0; b < 256; ++b) t[b] = decode_float8(static_cast<std::uint8_t>(b), {E, M, Bias, S});
    return t;
  }();
  return table;
}

const Table& e8m0_table() noexcept {
  static const Table table = [] {
    Table t{};
    for (int b = 0; b < 255; ++b) t[b] = std::ldexp(1.0f, b - 127);  // 2^-127 is a float32 subnormal
    t[255] = std::numeric_limits<float>::quiet_NaN();
    return t;
  }();
  return table;
}

template <const Table& (*TableOf)() noexcept>
void widen_by_table(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  const Table& table = TableOf();
  for (std::size_t i = 0; i < count; ++i) {
    const float v = table[static_cast<std::uint8_t>(src[i])];
    std::memcpy(dst + 4 * i, &v, 4);
  }
}

void widen_bfloat16(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t half;
    std::memcpy(&half, src + 2 * i, 2);
    const std::uint32_t bits = std::uint32_t{half} << 16;  // bfloat16 is float32's top half
    std::memcpy(dst + 4 * i, &bits, 4);
  }
}

void widen_complex32(std::byte* dst, const std::byte* src, std::size_t count) noexcept {
  for (std::size_t i = 0; i < 2 * count; ++i) {  // real and imaginary halves alike
    std::uint16_t half;
    std::memcpy(&half, src + 2 * i, 2);
    const float v = half_to_float(half);
    std::memcpy(dst + 4 * i, &v, 4);
  }
}

}  // namespace

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const int exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
    return sign ? -magnitude : magnitude;
  }
  const std::uint32_t bits = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)
                                              : sign | (static_cast<std::uint32_t>(exponent - 15 + 127) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

ElementWidener widener_for(const char* name) noexcept {
  const std::string_view n(name);
  if (n == "bfloat16") return &widen_bfloat16;
  if (n == "complex32") return &widen_complex32;
  if (n == "float8_e4m3fn") return &widen_by_table<&float8_table<4, 3, 7, Specials::Fn>>;
  if (n == "float8_e4m3fnuz") return &widen_by_table<&float8_table<4, 3, 8, Specials::Fnuz>>;
  if (n == "float8_e5m2") return &widen_by_table<&float8_table<5, 2, 15, Specials::Ieee>>;
  if (n == "float8_e5m2fnuz") return &widen_by_table<&float8_table<5, 2, 16, Specials::Fnuz>>;
  if (n == "float8_e8m0fnu") return &widen_by_table<&e8m0_table>;
  return nullptr;
}

}  // namespace ophook::py
