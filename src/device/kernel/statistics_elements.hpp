#pragma once
// The element kinds the device statistics kernel reads and how their bytes become values, for
// ophook/statistics_kernel.hpp: compiled as host C++, under nvcc and under NVRTC alike (no
// standard library under NVRTC: builtin types and functions only).

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstring>
#endif
#if defined(__CUDACC__)
#define OPHOOK_KERNEL_FN __host__ __device__ inline
// The loop over one element kind's tensor: a call of its own on a GPU, so that ptxas allocates
// each kind's registers apart (inlined into one function, it spilled across them).
#define OPHOOK_KERNEL_LOOP_FN __host__ __device__ __noinline__
#else
#define OPHOOK_KERNEL_FN inline
#define OPHOOK_KERNEL_LOOP_FN inline
#endif

namespace ophook::device::statistics_kernel {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

/// Element types the kernel reads (a torch dtype's, see torch/dtypes.cpp); 0: none, the tensor
/// is read the generic way.
enum ElementKind : u32 {
  kNone = 0,
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kComplex64,
  kComplex128,
  kFloat8E4M3FN,
  kFloat8E5M2,
};

OPHOOK_KERNEL_FN constexpr u32 item_size(u32 kind) {
  switch (kind) {
    case kBool: case kInt8: case kUInt8: case kFloat8E4M3FN: case kFloat8E5M2: return 1;
    case kInt16: case kUInt16: case kFloat16: case kBFloat16: return 2;
    case kInt32: case kUInt32: case kFloat32: return 4;
    case kInt64: case kUInt64: case kFloat64: case kComplex64: return 8;
    case kComplex128: return 16;
    default: return 0;
  }
}

/// Floating and complex kinds can hold NaN and Inf; the others are all finite.
OPHOOK_KERNEL_FN constexpr bool can_be_nonfinite(u32 kind) {
  return kind == kFloat16 || kind == kBFloat16 || kind == kFloat32 || kind == kFloat64 || kind == kComplex64 ||
         kind == kComplex128 || kind == kFloat8E4M3FN || kind == kFloat8E5M2;
}

OPHOOK_KERNEL_FN double bits_to_double(u64 bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

OPHOOK_KERNEL_FN float bits_to_float(u32 bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(static_cast<int>(bits));
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

OPHOOK_KERNEL_FN double positive_infinity() { return bits_to_double(0x7FF0000000000000ULL); }
OPHOOK_KERNEL_FN double quiet_nan() { return bits_to_double(0x7FF8000000000000ULL); }
OPHOOK_KERNEL_FN bool is_nan(double v) { return v != v; }
OPHOOK_KERNEL_FN bool is_finite(double v) { return v - v == 0.0; }  // Inf - Inf and NaN - NaN are NaN

OPHOOK_KERNEL_FN double square_root(double v) {
#if defined(__CUDA_ARCH__)
  return sqrt(v);  // IEEE, correctly rounded, as std::sqrt
#else
  return std::sqrt(v);
#endif
}

OPHOOK_KERNEL_FN double hypotenuse(double a, double b) {
#if defined(__CUDA_ARCH__)
  return hypot(a, b);
#else
  return std::hypot(a, b);
#endif
}

/// IEEE binary16 → double, exactly (as ophook/half.hpp).
OPHOOK_KERNEL_FN double half_value(u16 h) {
  const u32 sign = static_cast<u32>(h & 0x8000u) << 16;
  const u32 exponent = (h >> 10) & 0x1Fu;
  const u32 mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const double magnitude = static_cast<double>(mantissa) * (1.0 / 16777216.0);  // 2^-24: subnormals
  return sign != 0 ? -magnitude : magnitude;
}

/// IEEE binary16 → float, exactly (every half is a float): on a GPU its one conversion instruction.
OPHOOK_KERNEL_FN float half_float(u16 h) {
#if defined(__CUDA_ARCH__)
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(h));
  return value;
#else
  return static_cast<float>(half_value(h));
#endif
}

/// float8 e4m3fn (no Inf; S.1111.111 is NaN) and e5m2 (IEEE-like) → double, exactly, as the
/// writer's wideners (torch/tensors/float_formats.cpp) give them to src/core/stats/stats.cpp.
OPHOOK_KERNEL_FN double e4m3fn_value(u8 b) {
  const bool negative = (b & 0x80u) != 0;
  const u32 exponent = (b >> 3) & 0xFu;
  const u32 mantissa = b & 0x7u;
  if (exponent == 0xF && mantissa == 0x7) return quiet_nan();
  // Subnormal: 2^-6 * m/8; normal: (1 + m/8) * 2^(e-7) = (8 + m) * 2^(e-10), the power of two
  // made from its bits (no loop: a GPU's threads would diverge on each value's exponent).
  const double magnitude = exponent == 0 ? static_cast<double>(mantissa) * (1.0 / 512.0)
                                         : static_cast<double>(8 + mantissa) *
                                               bits_to_double(static_cast<u64>(exponent + 1013) << 52);
  return negative ? -magnitude : magnitude;
}

OPHOOK_KERNEL_FN double e5m2_value(u8 b) { return half_value(static_cast<u16>(static_cast<u16>(b) << 8)); }

template <typename T>
OPHOOK_KERNEL_FN T load(const u8* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const T*>(p);  // aligned: the caller loads whole elements or aligned groups
#else
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
#endif
}

template <typename T>
OPHOOK_KERNEL_FN void store(u8* p, const T& value) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<T*>(p) = value;
#else
  std::memcpy(p, &value, sizeof value);
#endif
}

/// Up to 16 bytes of a tensor's memory, little-endian: one group of elements.
struct Bits {
  u64 lo = 0, hi = 0;
};

/// The `size` bytes at `p` (1, 2, 4, 8 or 16, aligned to their element's size).
OPHOOK_KERNEL_FN Bits load_bits(const u8* p, u32 size) {
  Bits b;
  switch (size) {
    case 1: b.lo = *p; break;
    case 2: b.lo = load<u16>(p); break;
    case 4: b.lo = load<u32>(p); break;
    case 8: b.lo = load<u64>(p); break;
    default: b.lo = load<u64>(p), b.hi = load<u64>(p + 8); break;
  }
  return b;
}

/// The 16 bytes at `p`, aligned to 16: on a GPU one load instruction (four times the bytes of a
/// float32's, so four times the bytes in flight per thread).
OPHOOK_KERNEL_FN Bits load_vector(const u8* p) {
#if defined(__CUDA_ARCH__)
  const ulonglong2 v = *reinterpret_cast<const ulonglong2*>(p);
  Bits b;
  b.lo = v.x, b.hi = v.y;
  return b;
#else
  Bits b;
  std::memcpy(&b.lo, p, 8);
  std::memcpy(&b.hi, p + 8, 8);
  return b;
#endif
}

/// Writes the 16 bytes of `b` at `p`, aligned to 16.
OPHOOK_KERNEL_FN void store_vector(u8* p, Bits b) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<ulonglong2*>(p) = make_ulonglong2(b.lo, b.hi);
#else
  std::memcpy(p, &b.lo, 8);
  std::memcpy(p + 8, &b.hi, 8);
#endif
}

/// Writes the `size` bytes of `b` (1, 2, 4, 8 or 16) at `p`, aligned to `size` (at most 8).
OPHOOK_KERNEL_FN void store_bits(u8* p, Bits b, u32 size) {
  switch (size) {
    case 1: *p = static_cast<u8>(b.lo); break;
    case 2: { const u16 v = static_cast<u16>(b.lo); store(p, v); break; }
    case 4: { const u32 v = static_cast<u32>(b.lo); store(p, v); break; }
    case 8: store(p, b.lo); break;
    default: store(p, b.lo), store(p + 8, b.hi); break;
  }
}

/// The value statistics are taken of, from an element's bits: reals as double, bool as 0/1, a
/// complex number by its magnitude (NaN when either part is NaN; sqrt(re² + im²) for complex64,
/// hypot for complex128), exactly as src/core/stats/stats.cpp reads the bytes the writer gets. A
/// template on the kind: the kernel's loop is compiled once per kind, with no switch inside.
template <u32 Kind>
OPHOOK_KERNEL_FN double element_value(u64 lo, u64 hi) {
  if constexpr (Kind == kBool) return (lo & 0xFFu) != 0 ? 1.0 : 0.0;
  if constexpr (Kind == kInt8) return static_cast<double>(static_cast<signed char>(lo & 0xFFu));
  if constexpr (Kind == kUInt8) return static_cast<double>(lo & 0xFFu);
  if constexpr (Kind == kInt16) return static_cast<double>(static_cast<short>(lo & 0xFFFFu));
  if constexpr (Kind == kUInt16) return static_cast<double>(lo & 0xFFFFu);
  if constexpr (Kind == kInt32) return static_cast<double>(static_cast<int>(static_cast<u32>(lo)));
  if constexpr (Kind == kUInt32) return static_cast<double>(static_cast<u32>(lo));
  if constexpr (Kind == kInt64) return static_cast<double>(static_cast<i64>(lo));
  if constexpr (Kind == kUInt64) return static_cast<double>(lo);
  if constexpr (Kind == kFloat16) return half_value(static_cast<u16>(lo));
  if constexpr (Kind == kBFloat16) return bits_to_float(static_cast<u32>(lo & 0xFFFFu) << 16);
  if constexpr (Kind == kFloat32) return bits_to_float(static_cast<u32>(lo));
  if constexpr (Kind == kFloat64) return bits_to_double(lo);
  if constexpr (Kind == kFloat8E4M3FN) return e4m3fn_value(static_cast<u8>(lo));
  if constexpr (Kind == kFloat8E5M2) return e5m2_value(static_cast<u8>(lo));
  if constexpr (Kind == kComplex64) {
    const double re = bits_to_float(static_cast<u32>(lo)), im = bits_to_float(static_cast<u32>(lo >> 32));
    if (is_nan(re) || is_nan(im)) return quiet_nan();
    return square_root(re * re + im * im);
  }
  if constexpr (Kind == kComplex128) {
    const double re = bits_to_double(lo), im = bits_to_double(hi);
    if (is_nan(re) || is_nan(im)) return quiet_nan();
    return hypotenuse(re, im);
  }
  (void)hi;
  return 0.0;
}

}  // namespace ophook::device::statistics_kernel
