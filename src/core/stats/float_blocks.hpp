#pragma once
// Block kernels for the statistics of native-order float32/float64 arrays, eight doubles at a
// time: element by element, or two doubles at a time (SSE2, which every x86-64 has), the
// statistics are slower than hashing the same bytes, and in `stats` mode the program waits for
// them (docs/performance.md, "Figures behind the code"). The kernels
// (float_block_kernels.hpp) are compiled for the baseline and for AVX2, picked once per process.
// A block's kernel assumes every element is finite and reports whether that held; the caller
// then commits the block's results or redoes the block element by element.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL  // header-only: libophook_core.so must not depend on libxxhash.so
#endif
#include <xxhash.h>

namespace ophook::core::float_blocks {

constexpr std::size_t kStep = 16;  // elements per step; blocks are cut to multiples

/// Running minimum and maximum of the blocks the kernels committed.
struct Extremes {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
};

/// Sums of a block's deviations from a centre: Σ(x − c) and Σ(x − c)².
struct ShiftedSums {
  double sum = 0, squares = 0;
};

// A block's kernels need no NaN/Inf test per element: a NaN or an Inf makes the block's sums NaN or
// infinite, and so does overflow; either way the caller redoes the block element by element,
// which also undoes what an Inf did to the minimum or maximum.

/// Min and max of the `n` elements at `data` (n a multiple of kStep, any alignment) into `running`,
/// and their deviations from `centre` into `sums`, when both sums are finite (every element is);
/// false, `running` and `sums` untouched, otherwise. Either way the `n` elements' bytes are fed to
/// `digest`.
bool moments_and_digest_f32(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums,
                            XXH64_state_t& digest) noexcept;
bool moments_and_digest_f64(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums,
                            XXH64_state_t& digest) noexcept;

/// moments_and_digest_* without the digest: the training monitor's norms and extremes.
bool moments_f32(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums) noexcept;
bool moments_f64(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums) noexcept;

/// Σ(a − b)² over the `n` elements at `a` and `b` (n a multiple of kStep) into `squares`, in
/// double, when it is finite; false, `squares` untouched, otherwise.
bool squared_distance_f32(const std::byte* a, const std::byte* b, std::size_t n, double& squares) noexcept;
bool squared_distance_f64(const std::byte* a, const std::byte* b, std::size_t n, double& squares) noexcept;

/// Whether any of the `count` IEEE components of width 2, 4 or 8 bytes at `data` has an all-ones
/// exponent (NaN or Inf); `mask` holds the exponent's bits, byte-swapped for the other byte order.
/// OPHOOK_NAN's check: runs on the program's thread.
bool any_all_ones_exponent_u16(const std::byte* data, std::size_t count, std::uint16_t mask) noexcept;
bool any_all_ones_exponent_u32(const std::byte* data, std::size_t count, std::uint32_t mask) noexcept;
bool any_all_ones_exponent_u64(const std::byte* data, std::size_t count, std::uint64_t mask) noexcept;

/// XXH3 (64 bits, seed 0) of `n` bytes: what tells a remembered array's content from a changed one
/// (stats_memo.hpp): several times XXH64's speed with AVX2 or AVX-512, about XXH64's with the
/// baseline's SSE2 (docs/performance.md, "Figures behind the code").
std::uint64_t content_hash(const std::byte* data, std::size_t n) noexcept;

/// The kernels of one instruction set (float_block_kernels.hpp).
struct Kernels {
  bool (*moments_and_digest_f32)(const std::byte*, std::size_t, double, Extremes&, ShiftedSums&, XXH64_state_t&) noexcept;
  bool (*moments_and_digest_f64)(const std::byte*, std::size_t, double, Extremes&, ShiftedSums&, XXH64_state_t&) noexcept;
  bool (*moments_f32)(const std::byte*, std::size_t, double, Extremes&, ShiftedSums&) noexcept;
  bool (*moments_f64)(const std::byte*, std::size_t, double, Extremes&, ShiftedSums&) noexcept;
  bool (*squared_distance_f32)(const std::byte*, const std::byte*, std::size_t, double&) noexcept;
  bool (*squared_distance_f64)(const std::byte*, const std::byte*, std::size_t, double&) noexcept;
  bool (*any_all_ones_exponent_u16)(const std::byte*, std::size_t, std::uint16_t) noexcept;
  bool (*any_all_ones_exponent_u32)(const std::byte*, std::size_t, std::uint32_t) noexcept;
  bool (*any_all_ones_exponent_u64)(const std::byte*, std::size_t, std::uint64_t) noexcept;
  std::uint64_t (*content_hash)(const std::byte*, std::size_t) noexcept;
};

/// The kernels for the baseline instruction set, and those compiled for AVX2 and for AVX-512
/// (float_blocks_avx2.cpp, float_blocks_avx512.cpp; nullptr where the build has none: another
/// architecture). All give the same bits; the functions above use the best this CPU runs.
const Kernels& baseline_kernels() noexcept;
const Kernels* avx2_kernels() noexcept;
const Kernels* avx512_kernels() noexcept;

/// The kernels by element type (float or double).
template <typename T>
inline bool moments_and_digest(const std::byte* data, std::size_t n, double centre, Extremes& running, ShiftedSums& sums,
                               XXH64_state_t& digest) noexcept {
  if constexpr (std::is_same_v<T, float>) return moments_and_digest_f32(data, n, centre, running, sums, digest);
  return moments_and_digest_f64(data, n, centre, running, sums, digest);
}
template <typename U>
inline bool any_all_ones_exponent(const std::byte* data, std::size_t count, U mask) noexcept {
  if constexpr (sizeof(U) == 2) return any_all_ones_exponent_u16(data, count, mask);
  if constexpr (sizeof(U) == 4) return any_all_ones_exponent_u32(data, count, mask);
  return any_all_ones_exponent_u64(data, count, mask);
}

}  // namespace ophook::core::float_blocks
