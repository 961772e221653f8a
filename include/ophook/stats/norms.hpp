#pragma once
// The training monitor's per-tensor statistics of a parameter, its gradient and its update, on the
// CPU: one pass per array with the statistics' block kernels, instead of the five to seven
// multi-tensor ops (norm, aminmax, a subtraction) that read each parameter again.
#include <cstddef>
#include <cstdint>

#include "ophook/export.hpp"

namespace ophook::core {

/// What the monitor reports of one array: Σx² (the norm squared), min and max, NaN and Inf
/// counts. As torch's norm and aminmax say them: a NaN element makes Σx², min and max NaN; an Inf
/// makes Σx² infinite and takes part in min and max. An empty array: Σx² 0, min and max NaN.
struct NormStats {
  double squares = 0;
  double min = 0, max = 0;
  std::uint64_t nan = 0, inf = 0;
};

/// NormStats of `n` native-order float32 or float64 elements at `data`. Pure, thread-safe.
OPHOOK_API NormStats norm_stats_f32(const std::byte* data, std::size_t n) noexcept;
OPHOOK_API NormStats norm_stats_f64(const std::byte* data, std::size_t n) noexcept;

/// The update of `n` weights since they were last kept: Σ(kept − current)² in double (NaN where
/// either holds a NaN), and then `current` copied into `kept` for the next step, block by block
/// while each is in the cache. Pure but for `kept`, thread-safe.
OPHOOK_API double update_squares_f32(std::byte* kept, const std::byte* current, std::size_t n) noexcept;
OPHOOK_API double update_squares_f64(std::byte* kept, const std::byte* current, std::size_t n) noexcept;

}  // namespace ophook::core
