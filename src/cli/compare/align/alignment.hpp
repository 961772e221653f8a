#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ophook::cli {

/// One step of an alignment of two sequences: a pair (both indices set) or an element of one
/// side only (the other index is -1).
struct AlignStep {
  std::int64_t base = -1;
  std::int64_t other = -1;
  bool paired() const { return base >= 0 && other >= 0; }
};

/// Aligns `base` and `other` (symbols, e.g. interned op names) along a longest common
/// subsequence: equal symbols are paired in order, the rest appear once as one-sided steps, all
/// in sequence order (within a gap, base-only steps come before other-only steps).
/// Memory stays linear in the input (Hirschberg's divide and conquer) and time is about
/// |base|·|other|/64 word operations (bit-parallel LCS rows), after common prefix and suffix are
/// stripped. Pure, thread-safe.
std::vector<AlignStep> align_sequences(std::span<const std::uint32_t> base,
                                       std::span<const std::uint32_t> other);

/// Length of a longest common subsequence, by the same bit-parallel rows; for tests and checks.
std::size_t lcs_length(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b);

}  // namespace ophook::cli
