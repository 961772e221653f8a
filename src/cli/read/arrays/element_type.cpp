#include "read/arrays/element_type.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

#include "ophook/stats/half.hpp"

namespace ophook::cli {

namespace {

constexpr bool kLittleHost = std::endian::native == std::endian::little;

/// A float16 element ('<f2'), converted with core::half_to_double.
struct Half {
  std::uint16_t bits;
  explicit operator double() const { return core::half_to_double(bits); }
};

template <typename U>
U load_bits(const std::byte* p, bool swap) {
  U bits;
  std::memcpy(&bits, p, sizeof bits);
  if (swap) {
    if constexpr (sizeof(U) == 2) bits = __builtin_bswap16(bits);
    if constexpr (sizeof(U) == 4) bits = __builtin_bswap32(bits);
    if constexpr (sizeof(U) == 8) bits = __builtin_bswap64(bits);
  }
  return bits;
}

template <typename T>
T load_as(const std::byte* p, bool swap) {
  if constexpr (sizeof(T) == 1) {
    T value;
    std::memcpy(&value, p, 1);
    return value;
  } else if constexpr (sizeof(T) == 2) {
    return std::bit_cast<T>(load_bits<std::uint16_t>(p, swap));
  } else if constexpr (sizeof(T) == 4) {
    return std::bit_cast<T>(load_bits<std::uint32_t>(p, swap));
  } else {
    return std::bit_cast<T>(load_bits<std::uint64_t>(p, swap));
  }
}

template <typename T>
void load_scalars(const std::byte* data, std::size_t first, std::size_t count, bool swap,
                  double* out) {
  const std::byte* p = data + first * sizeof(T);
  for (std::size_t i = 0; i < count; ++i, p += sizeof(T)) {
    out[i] = static_cast<double>(load_as<T>(p, swap));
  }
}

template <typename T>
void load_pairs(const std::byte* data, std::size_t first, std::size_t count, bool swap, double* re,
                double* im) {
  const std::byte* p = data + first * 2 * sizeof(T);
  for (std::size_t i = 0; i < count; ++i, p += 2 * sizeof(T)) {
    re[i] = static_cast<double>(load_as<T>(p, swap));
    im[i] = static_cast<double>(load_as<T>(p + sizeof(T), swap));
  }
}

}  // namespace

ElementType decode_descr(std::string_view descr) {
  ElementType type;
  if (descr.size() < 3) return type;
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return type;
  const char code = descr[1];
  const std::string_view digits = descr.substr(2);
  unsigned size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || size > 64) return type;
    size = size * 10 + static_cast<unsigned>(c - '0');
  }
  auto valid = [&](std::initializer_list<unsigned> sizes) {
    for (unsigned s : sizes) {
      if (s == size) return true;
    }
    return false;
  };
  ElementKind kind = ElementKind::Other;
  switch (code) {
    case 'b':
      if (valid({1})) kind = ElementKind::Bool;
      break;
    case 'i':
      if (valid({1, 2, 4, 8})) kind = ElementKind::Int;
      break;
    case 'u':
      if (valid({1, 2, 4, 8})) kind = ElementKind::UInt;
      break;
    case 'f':
      if (valid({2, 4, 8})) kind = ElementKind::Float;
      break;
    case 'c':
      if (valid({8, 16})) kind = ElementKind::Complex;
      break;
    default:
      break;
  }
  if (kind == ElementKind::Other) return type;
  type.kind = kind;
  type.size = size;
  type.swap = size > 1 && ((order == '>' && kLittleHost) || (order == '<' && !kLittleHost));
  return type;
}

void load_real(const ElementType& type, const std::byte* data, std::size_t first, std::size_t count,
               double* out) {
  const bool s = type.swap;
  switch (type.kind) {
    case ElementKind::Bool:
      for (std::size_t i = 0; i < count; ++i) out[i] = data[first + i] != std::byte{0} ? 1.0 : 0.0;
      return;
    case ElementKind::Int:
      switch (type.size) {
        case 1:
          return load_scalars<std::int8_t>(data, first, count, s, out);
        case 2:
          return load_scalars<std::int16_t>(data, first, count, s, out);
        case 4:
          return load_scalars<std::int32_t>(data, first, count, s, out);
        default:
          return load_scalars<std::int64_t>(data, first, count, s, out);
      }
    case ElementKind::UInt:
      switch (type.size) {
        case 1:
          return load_scalars<std::uint8_t>(data, first, count, s, out);
        case 2:
          return load_scalars<std::uint16_t>(data, first, count, s, out);
        case 4:
          return load_scalars<std::uint32_t>(data, first, count, s, out);
        default:
          return load_scalars<std::uint64_t>(data, first, count, s, out);
      }
    case ElementKind::Float:
      switch (type.size) {
        case 2:
          return load_scalars<Half>(data, first, count, s, out);
        case 4:
          return load_scalars<float>(data, first, count, s, out);
        default:
          return load_scalars<double>(data, first, count, s, out);
      }
    case ElementKind::Complex: {
      // Real part only; callers that care about complex values use load_complex.
      const std::size_t half = type.size / 2;
      for (std::size_t i = 0; i < count; ++i) {
        const std::byte* p = data + (first + i) * type.size;
        out[i] = half == 4 ? static_cast<double>(load_as<float>(p, s)) : load_as<double>(p, s);
      }
      return;
    }
    case ElementKind::Other:
      for (std::size_t i = 0; i < count; ++i) out[i] = 0.0;
      return;
  }
}

void load_complex(const ElementType& type, const std::byte* data, std::size_t first,
                  std::size_t count, double* re, double* im) {
  if (type.kind != ElementKind::Complex) {
    load_real(type, data, first, count, re);
    for (std::size_t i = 0; i < count; ++i) im[i] = 0.0;
    return;
  }
  if (type.size == 8) {
    load_pairs<float>(data, first, count, type.swap, re, im);
  } else {
    load_pairs<double>(data, first, count, type.swap, re, im);
  }
}

}  // namespace ophook::cli
