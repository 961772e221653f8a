#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

namespace ophook::cli {

/// numpy.allclose's tolerances: a value is close to its reference (the BASE run's) when
/// |value - reference| <= atol + rtol * |reference|, as numpy.allclose(value, reference).
struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-8;
};

/// How two values of a pair compare. Errors are over the positions where both are finite;
/// NaN/Inf positions must agree exactly (NaN with NaN, +Inf with +Inf) or they count as
/// nonfinite mismatches. cosine is NaN when undefined (no finite position).
struct ArrayDiff {
  bool shape_mismatch = false;
  bool dtype_mismatch = false;
  bool compared = false;       // values (or bytes, or stats) were compared
  bool bitwise_equal = false;  // identical bytes: every error below is 0
  std::uint64_t elements = 0;
  std::uint64_t not_close = 0;           // elements (or stats) outside tolerance, NaN/Inf included
  std::uint64_t nonfinite_mismatch = 0;  // positions where the NaN/Inf pattern differs
  double max_abs = 0;
  double max_rel = 0;  // max |a-b|/|a| (a = reference) where they differ; Inf when a == 0 there
  double cosine = std::numeric_limits<double>::quiet_NaN();
  std::int64_t worst_index = -1;  // flat C-order index of the largest |a-b|

  /// Same shape and dtype, and every compared element close with matching NaN/Inf pattern.
  bool within_tolerance() const {
    return !shape_mismatch && !dtype_mismatch && not_close == 0 && nonfinite_mismatch == 0;
  }
};

/// A C-contiguous buffer of `elements` items of numpy descr `descr`, as it lies in a .npy file.
struct BufferView {
  std::string_view descr;
  std::size_t item_size = 0;  // bytes per element, from the .npy header
  std::uint64_t elements = 0;
  std::span<const std::byte> data;
};

/// Compares two buffers of the same shape element by element; `a` is the reference (BASE). Numeric
/// descrs (bool, ints, floats incl. float16, complex; any byte order) are compared as numbers, also
/// across different numeric dtypes (dtype_mismatch is set by the caller, which knows the dtypes it
/// wants to report). Other descrs are compared bytewise per element. Identical bytes take a
/// memcmp fast path. Uses up to `threads` threads for large buffers. Pure, thread-safe.
ArrayDiff compare_buffers(const BufferView& a, const BufferView& b, Tolerance tolerance,
                          unsigned threads = 1);

/// Compares two scalars (e.g. Python floats in a record) with the same rules.
ArrayDiff compare_scalars(double a, double b, Tolerance tolerance);

}  // namespace ophook::cli
