#pragma once
// The block kernels of float_blocks.hpp as templates, written once with GCC vector extensions
// (four doubles, eight floats per vector; eight doubles where AVX-512 has the registers) and
// compiled three times: for the baseline (float_blocks.cpp), with AVX2 (float_blocks_avx2.cpp) and
// with AVX-512 (float_blocks_avx512.cpp), which the dispatch in float_blocks.cpp picks on a CPU
// that has them. Include only from those files: every definition here has internal linkage, so
// that the compilations cannot be mixed up by the linker.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "stats/float_blocks.hpp"

namespace ophook::core::float_blocks {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): one copy per instruction set, on purpose

using Wide = double __attribute__((vector_size(32)));      // four doubles
using Floats = float __attribute__((vector_size(32)));     // eight floats
using FourFloats = float __attribute__((vector_size(16)));
constexpr std::size_t kLanes = sizeof(Wide) / sizeof(double);
constexpr std::size_t kParts = kStep / kLanes;  // accumulators, so that the adds overlap
static_assert(kParts == 4);
// Elements given to the digest at once: few enough for its work and the statistics' to be in
// flight together, enough that its state's trip through memory on each call costs little.
constexpr std::size_t kDigestElements = 4 * kStep;

template <typename V>
inline V load(const std::byte* p) noexcept {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Elements [4k, 4k + 4) of the step at `p` as doubles.
template <typename T>
inline Wide part(const std::byte* p, std::size_t k) noexcept {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>);
  if constexpr (std::is_same_v<T, double>) {
    return load<Wide>(p + k * sizeof(Wide));
  } else {
#if defined(__AVX__)
    // One vcvtps2pd: GCC 12 turns __builtin_convertvector into two half-width ones and a merge.
    return reinterpret_cast<Wide>(_mm256_cvtps_pd(reinterpret_cast<__m128>(load<FourFloats>(p + k * sizeof(FourFloats)))));
#else
    return __builtin_convertvector(load<FourFloats>(p + k * sizeof(FourFloats)), Wide);
#endif
  }
}

#if defined(__AVX512F__)
using Wider = double __attribute__((vector_size(64)));  // eight doubles: two Wide side by side

/// Elements [8k, 8k + 8) of the step at `p` as doubles: part(p, 2k) and part(p, 2k + 1) in one.
template <typename T>
inline Wider pair(const std::byte* p, std::size_t k) noexcept {
  if constexpr (std::is_same_v<T, double>) {
    return load<Wider>(p + k * sizeof(Wider));
  } else {
    // One vcvtps2pd, as part() (GCC 12 splits __builtin_convertvector); the zero-masking form
    // because the plain one passes GCC 12's header an uninitialized operand it warns about.
    return reinterpret_cast<Wider>(_mm512_maskz_cvtps_pd(0xFF, reinterpret_cast<__m256>(load<Floats>(p + k * sizeof(Floats)))));
  }
}

inline Wide low_half(Wider v) noexcept { return __builtin_shufflevector(v, v, 0, 1, 2, 3); }
inline Wide high_half(Wider v) noexcept { return __builtin_shufflevector(v, v, 4, 5, 6, 7); }
#endif

inline double lanes_sum(Wide a, Wide b, Wide c, Wide d) noexcept {
  const Wide v = (a + b) + (c + d);
  return (v[0] + v[1]) + (v[2] + v[3]);
}

template <typename V>
inline V lesser(V a, V b) noexcept { return a < b ? a : b; }
template <typename V>
inline V greater(V a, V b) noexcept { return a > b ? a : b; }

// Float32's minimum and maximum are taken as float32, eight at a time (exact: a comparison does
// not round), which halves their work; the deviations are in double, as every statistic. The
// digest is fed the same bytes a few steps at a time in the same loop: XXH64 waits on its
// multiplications while the statistics keep the vector units busy, so the two overlap instead of
// taking turns.
template <typename T, bool kDigest = true>
inline bool moments_and_digest_of(const std::byte* data, std::size_t n, double centre, Extremes& running,
                                  ShiftedSums& sums, XXH64_state_t* digest) noexcept {
  using Lanes = std::conditional_t<std::is_same_v<T, float>, Floats, Wide>;
  constexpr std::size_t kPerLanes = sizeof(Lanes) / sizeof(T);
  // ±Inf or a value of T: exact either way.
  Lanes lo = Lanes{} + static_cast<T>(running.min), hi = Lanes{} + static_cast<T>(running.max);
#if defined(__AVX512F__)
  // The same sixteen running sums as below, two accumulators to a register: the same bits.
  const Wider c = Wider{} + centre;
  Wider s01 = {}, s23 = {}, q01 = {}, q23 = {};
#else
  const Wide c = Wide{} + centre;
  Wide s0 = {}, s1 = {}, s2 = {}, s3 = {};
  Wide q0 = {}, q1 = {}, q2 = {}, q3 = {};
#endif
  for (std::size_t i = 0; i < n; i += kStep) {
    const std::byte* p = data + i * sizeof(T);
    if constexpr (kDigest) {
      if (i % kDigestElements == 0) XXH64_update(digest, p, std::min(n - i, kDigestElements) * sizeof(T));
    }
    for (std::size_t k = 0; k < kStep / kPerLanes; k += 2) {
      const Lanes a = load<Lanes>(p + k * sizeof(Lanes)), b = load<Lanes>(p + (k + 1) * sizeof(Lanes));
      lo = lesser(lo, lesser(a, b));
      hi = greater(hi, greater(a, b));
    }
#if defined(__AVX512F__)
    const Wider d01 = pair<T>(p, 0) - c, d23 = pair<T>(p, 1) - c;
    s01 += d01, s23 += d23;
    q01 += d01 * d01, q23 += d23 * d23;
#else
    const Wide d0 = part<T>(p, 0) - c, d1 = part<T>(p, 1) - c;
    const Wide d2 = part<T>(p, 2) - c, d3 = part<T>(p, 3) - c;
    s0 += d0, s1 += d1, s2 += d2, s3 += d3;
    q0 += d0 * d0, q1 += d1 * d1, q2 += d2 * d2, q3 += d3 * d3;
#endif
  }
#if defined(__AVX512F__)
  const Wide s0 = low_half(s01), s1 = high_half(s01), s2 = low_half(s23), s3 = high_half(s23);
  const Wide q0 = low_half(q01), q1 = high_half(q01), q2 = low_half(q23), q3 = high_half(q23);
#endif
  const ShiftedSums block = {lanes_sum(s0, s1, s2, s3), lanes_sum(q0, q1, q2, q3)};
  // A NaN or Inf element makes both sums non-finite, and so does an overflow.
  if (!std::isfinite(block.sum) || !std::isfinite(block.squares)) return false;
  for (std::size_t k = 0; k < kPerLanes; ++k) {
    running.min = std::min<double>(running.min, lo[k]);
    running.max = std::max<double>(running.max, hi[k]);
  }
  sums = block;
  return true;
}

template <typename T>
inline bool moments_and_digest_with(const std::byte* data, std::size_t n, double centre, Extremes& running,
                                    ShiftedSums& sums, XXH64_state_t& digest) noexcept {
  return moments_and_digest_of<T, true>(data, n, centre, running, sums, &digest);
}
template <typename T>
inline bool moments_without_digest(const std::byte* data, std::size_t n, double centre, Extremes& running,
                                   ShiftedSums& sums) noexcept {
  return moments_and_digest_of<T, false>(data, n, centre, running, sums, nullptr);
}

// Σ(a − b)² in double, with the moments' four accumulators: the training monitor's update norm
// (the weights kept at the last step against now), one pass over both instead of a subtraction's
// pass and a norm's.
template <typename T>
inline bool squared_distance_of(const std::byte* a, const std::byte* b, std::size_t n, double& squares) noexcept {
  Wide q0 = {}, q1 = {}, q2 = {}, q3 = {};
  for (std::size_t i = 0; i < n; i += kStep) {
    const std::byte* p = a + i * sizeof(T);
    const std::byte* r = b + i * sizeof(T);
    const Wide d0 = part<T>(p, 0) - part<T>(r, 0), d1 = part<T>(p, 1) - part<T>(r, 1);
    const Wide d2 = part<T>(p, 2) - part<T>(r, 2), d3 = part<T>(p, 3) - part<T>(r, 3);
    q0 += d0 * d0, q1 += d1 * d1, q2 += d2 * d2, q3 += d3 * d3;
  }
  const double block = lanes_sum(q0, q1, q2, q3);
  if (!std::isfinite(block)) return false;
  squares = block;
  return true;
}

// The NaN/Inf scan: a branch-free test of a whole block of components (the mask is byte-swapped
// instead of each value), then one look at the block's result. 64 bytes at a time with AVX-512
// (1 MiB of float32 in cache: 0.019 -> 0.016 ms against AVX2's 32), 32 with AVX2, 16 without;
// 8-byte components stay scalar without AVX2 (SSE2 has no 64-bit compare), where the scalar loop
// runs at memory speed already.
constexpr std::size_t kScanBlock = 256;  // components per branch

template <typename U>
inline bool any_all_ones_exponent_scalar(const std::byte* data, std::size_t start, std::size_t count, U mask) noexcept {
  for (; start < count; start += kScanBlock) {
    const std::size_t end = std::min(count, start + kScanBlock);
    bool hit = false;
    for (std::size_t i = start; i < end; ++i) {
      U bits;
      std::memcpy(&bits, data + i * sizeof(U), sizeof bits);
      hit |= (bits & mask) == mask;
    }
    if (hit) return true;
  }
  return false;
}

#if defined(__AVX512F__)
constexpr std::size_t kScanBytes = 64;
#elif defined(__AVX2__)
constexpr std::size_t kScanBytes = 32;
#else
constexpr std::size_t kScanBytes = 16;
#endif

template <typename U> struct ScanLanes;  // vector_size cannot take a dependent type
template <> struct ScanLanes<std::uint16_t> { using type = std::uint16_t __attribute__((vector_size(kScanBytes))); };
template <> struct ScanLanes<std::uint32_t> { using type = std::uint32_t __attribute__((vector_size(kScanBytes))); };
template <> struct ScanLanes<std::uint64_t> { using type = std::uint64_t __attribute__((vector_size(kScanBytes))); };

template <typename U>
inline bool any_all_ones_exponent_of(const std::byte* data, std::size_t count, U mask) noexcept {
  if constexpr (sizeof(U) == 8 && kScanBytes == 16) {
    return any_all_ones_exponent_scalar<U>(data, 0, count, mask);
  } else {
    using Lanes = typename ScanLanes<U>::type;
    constexpr std::size_t kPerLanes = sizeof(Lanes) / sizeof(U);
    static_assert(kScanBlock % kPerLanes == 0);
    const Lanes masks = Lanes{} + mask;
    std::size_t start = 0;
    for (; start + kScanBlock <= count; start += kScanBlock) {
      decltype(masks == masks) hit = {};
      for (std::size_t i = start; i < start + kScanBlock; i += kPerLanes) {
        Lanes bits;
        std::memcpy(&bits, data + i * sizeof(U), sizeof bits);
        hit |= (bits & masks) == masks;
      }
      for (std::size_t k = 0; k < kPerLanes; ++k) {
        if (hit[k]) return true;
      }
    }
    return any_all_ones_exponent_scalar<U>(data, start, count, mask);
  }
}

// XXH3 picks its vector code from the including file's instruction set (XXH_VECTOR).
std::uint64_t content_hash_of(const std::byte* data, std::size_t n) noexcept { return XXH3_64bits(data, n); }

/// The kernels, as compiled in the including file.
constexpr Kernels kKernels = {
    moments_and_digest_with<float>,
    moments_and_digest_with<double>,
    moments_without_digest<float>,
    moments_without_digest<double>,
    squared_distance_of<float>,
    squared_distance_of<double>,
    any_all_ones_exponent_of<std::uint16_t>,
    any_all_ones_exponent_of<std::uint32_t>,
    any_all_ones_exponent_of<std::uint64_t>,
    content_hash_of,
};

}  // namespace
}  // namespace ophook::core::float_blocks
