#include "ophook/stats/norms.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "stats/float_blocks.hpp"

namespace ophook::core {
namespace {

namespace fb = float_blocks;

// Elements per kernel call: a block the kernels reject (it holds a NaN or an Inf) is redone
// element by element, so a non-finite element costs one block's scalar pass, not the array's.
constexpr std::size_t kBlock = 256 * fb::kStep;

template <typename T>
T element(const std::byte* data, std::size_t i) noexcept {
  T value;
  std::memcpy(&value, data + i * sizeof(T), sizeof value);
  return value;
}

/// Elements [begin, end) one by one into `out`, whose min/max are those of the non-NaN elements.
template <typename T>
void add_elements(const std::byte* data, std::size_t begin, std::size_t end, NormStats& out) noexcept {
  for (std::size_t i = begin; i < end; ++i) {
    const double x = element<T>(data, i);
    if (std::isnan(x)) {
      ++out.nan;
      continue;
    }
    if (std::isinf(x)) ++out.inf;
    out.squares += x * x;
    out.min = std::min(out.min, x);
    out.max = std::max(out.max, x);
  }
}

template <typename T>
NormStats norm_stats_of(const std::byte* data, std::size_t n) noexcept {
  NormStats out;
  out.min = std::numeric_limits<double>::infinity();
  out.max = -out.min;
  std::size_t i = 0;
  for (; i + fb::kStep <= n; i += kBlock) {
    const std::size_t count = std::min(kBlock, (n - i) / fb::kStep * fb::kStep);
    fb::Extremes extremes{out.min, out.max};
    fb::ShiftedSums sums;
    const std::byte* block = data + i * sizeof(T);
    const bool finite = std::is_same_v<T, float> ? fb::moments_f32(block, count, 0.0, extremes, sums)
                                                 : fb::moments_f64(block, count, 0.0, extremes, sums);
    if (finite) {
      out.squares += sums.squares;
      out.min = extremes.min, out.max = extremes.max;
    } else {
      add_elements<T>(data, i, i + count, out);
    }
    if (count < kBlock) {
      i += count;
      break;
    }
  }
  add_elements<T>(data, i, n, out);
  if (out.nan != 0 || n == 0) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (out.nan != 0) out.squares = nan;
    out.min = out.max = nan;
  }
  return out;
}

template <typename T>
double update_squares_one_by_one(const std::byte* kept, const std::byte* current, std::size_t begin,
                                 std::size_t end) noexcept {
  double squares = 0;
  for (std::size_t k = begin; k < end; ++k) {
    const double d = static_cast<double>(element<T>(kept, k)) - element<T>(current, k);
    squares += d * d;
  }
  return squares;
}

template <typename T>
double update_squares_of(std::byte* kept, const std::byte* current, std::size_t n) noexcept {
  double total = 0;
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t count = std::min(kBlock, n - i), whole = count / fb::kStep * fb::kStep;
    std::byte* pk = kept + i * sizeof(T);
    const std::byte* pc = current + i * sizeof(T);
    double squares = 0;
    const bool finite = whole == 0 || (std::is_same_v<T, float> ? fb::squared_distance_f32(pk, pc, whole, squares)
                                                                 : fb::squared_distance_f64(pk, pc, whole, squares));
    if (!finite) squares = update_squares_one_by_one<T>(pk, pc, 0, whole);
    total += squares + update_squares_one_by_one<T>(pk, pc, whole, count);
    std::memcpy(pk, pc, count * sizeof(T));
  }
  return total;
}

}  // namespace

NormStats norm_stats_f32(const std::byte* data, std::size_t n) noexcept { return norm_stats_of<float>(data, n); }
NormStats norm_stats_f64(const std::byte* data, std::size_t n) noexcept { return norm_stats_of<double>(data, n); }
double update_squares_f32(std::byte* kept, const std::byte* current, std::size_t n) noexcept {
  return update_squares_of<float>(kept, current, n);
}
double update_squares_f64(std::byte* kept, const std::byte* current, std::size_t n) noexcept {
  return update_squares_of<double>(kept, current, n);
}

}  // namespace ophook::core
