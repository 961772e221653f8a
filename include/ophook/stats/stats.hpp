#pragma once
#include "ophook/export.hpp"
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

namespace ophook::core {

/// Per-array statistics (docs/outputs.md, "Values"). min/max/mean/std are over the finite
/// values of real numeric types (bool counts as 0/1); for complex they are over the magnitudes;
/// `numeric` is false for strings, bytes, datetimes and anything else without an order.
struct ArrayStats {
  bool numeric = false;
  bool has_finite = false;   // at least one finite value: min..std are meaningful
  double min = 0, max = 0, mean = 0, std = 0;
  std::uint64_t nan = 0, inf = 0;
  std::uint64_t xxh64 = 0;   // XXH64 (seed 0) of the raw bytes as given
};

/// Bytes per block of an array's content hashes (compute_stats' `block_hashes`): one float64
/// chunk of the statistics' pass, so that a block is still in the L1 cache when it is hashed.
constexpr std::size_t kContentBlockBytes = std::size_t{16} << 10;
constexpr std::size_t content_block_count(std::size_t nbytes) noexcept {
  return (nbytes + kContentBlockBytes - 1) / kContentBlockBytes;
}

/// Computes statistics of a C-order buffer holding elements of numpy dtype `descr` (any byte
/// order). Pure, thread-safe, no allocation. Unknown descr: only xxh64 is set. With
/// `block_hashes` (content_block_count(nbytes) of them), also the XXH3 (64 bits, seed 0) of each
/// kContentBlockBytes of the buffer in order, the last block short, in the same pass.
OPHOOK_API ArrayStats compute_stats(std::string_view descr, const std::byte* data, std::size_t nbytes,
                                    std::uint64_t* block_hashes = nullptr);

/// {"min":..,"max":..,"mean":..,"std":..,"nan":..,"inf":..,"xxh64":"<16 hex digits>"}; min..std
/// are null when !numeric or !has_finite.
OPHOOK_API nlohmann::json stats_to_json(const ArrayStats& stats);

/// The digest of statistics computed on a tensor's device (docs/devices.md): XXH64 (seed 0) of
/// the two fingerprint sums over its raw bytes — sum of w_i * (2i + 1) and of w_i * w_i over the
/// bytes read as little-endian int32 words (or bytes, when their count is not a multiple of 4),
/// modulo 2^64 — and of `nbytes`, as three little-endian 64-bit integers. Equal bytes give equal
/// digests on every device; it is not the XXH64 of the bytes themselves. Pure, thread-safe.
OPHOOK_API std::uint64_t device_fingerprint_digest(std::uint64_t position_sum, std::uint64_t value_sum,
                                                   std::uint64_t nbytes) noexcept;

/// True when the buffer holds at least one NaN or Inf (float/complex descrs only); cheap early-exit.
OPHOOK_API bool has_nonfinite(std::string_view descr, const std::byte* data, std::size_t nbytes);

}  // namespace ophook::core
