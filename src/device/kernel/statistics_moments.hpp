#pragma once
// What a thread of the device statistics kernel keeps of its share of a tensor, and how shares
// merge (docs/devices.md, "Statistics on a CUDA device"): the moments (the counting Accumulator
// and FiniteMoments' bet that every value is finite) and the fingerprint sums. Compiled as host
// C++, under nvcc and under NVRTC, as statistics_kernel.hpp is: builtin types and functions only.
#include "device/kernel/statistics_elements.hpp"

namespace ophook::device::statistics_kernel {

/// What a thread, a block and finally the whole tensor know. Moments as count, mean and the sum of
/// squared deviations, merged as the writer merges its chunks (Chan et al.).
struct Partial {
  u64 finite;
  u64 nan;
  u64 nonfinite;
  double min, max, mean, m2;
  u64 position;  // sum of w_i * (2i + 1), modulo 2^64
  u64 by_value;  // sum of w_i * w_i, modulo 2^64
};

/// The result the host reads: the tensor's whole Partial.
using Result = Partial;

/// A thread's running moments: sums of deviations from its first finite value (the shift), turned
/// into a Partial at the end — no division per element, and no cancellation while the shift lies
/// within the values' spread.
struct Accumulator {
#if defined(__CUDA_ARCH__)
  // A GPU thread's share of a tensor is far below 2^32 elements (2^19 of a tensor filling 141 GB,
  // over a job's 1024 x 256 threads), and 32-bit counts spare the loop a carry per element.
  using Tally = u32;
#else
  using Tally = u64;  // the host takes whole tensors on one thread
#endif
  Partial part;  // the fingerprint sums and value()'s extremes; finish() adds the rest
  Tally finite = 0, nonfinite = 0, nan = 0;
  double shift = 0, sum = 0, squares = 0;
  // words_of_vector()'s sums until fold_vectors(): of S_k, of P_k, of the suffix sums; K
  u64 vector_sums = 0, running_sums = 0, suffix_sums = 0;
  Tally vectors = 0;
  float low, high;  // float_value()'s extremes, merged into part's at finish()

  OPHOOK_KERNEL_FN Accumulator() {
    part.finite = part.nan = part.nonfinite = 0;
    part.min = positive_infinity(), part.max = -positive_infinity();
    part.mean = part.m2 = 0;
    part.position = part.by_value = 0;
    low = bits_to_float(0x7F800000u), high = -low;
  }

  /// value() of a float: the same moments, the extremes compared as floats (widening to double
  /// is exact and keeps the order, so they are the same values), which spares a GPU the double
  /// compares and selects of two of the loop's few dozen instructions per element.
  OPHOOK_KERNEL_FN void float_value(float v) {
    if (!(v - v == 0.0f)) {  // Inf - Inf and NaN - NaN are NaN
      ++nonfinite;
      nan += v != v ? 1 : 0;
      return;
    }
    if (finite == 0) shift = v;
    ++finite;
    low = v < low ? v : low;
    high = v > high ? v : high;
    const double d = static_cast<double>(v) - shift;
    sum += d;
    squares += d * d;
  }

  OPHOOK_KERNEL_FN void value(double v) {
    if (!is_finite(v)) {
      ++nonfinite;
      nan += is_nan(v) ? 1 : 0;
      return;
    }
    if (finite == 0) shift = v;
    ++finite;
    part.min = v < part.min ? v : part.min;
    part.max = v > part.max ? v : part.max;
    const double d = v - shift;
    sum += d;
    squares += d * d;
  }

  /// Word `index` of the raw bytes (an int32 word sign-extended, or an unsigned byte).
  OPHOOK_KERNEL_FN void word(u64 index, i64 w) {
    const u64 bits = static_cast<u64>(w);
    part.position += bits * (2 * index + 1);
    part.by_value += bits * bits;
  }

  /// The four int32 words of 16 bytes `v`, the next of the vectors first, first + stride, … a
  /// thread takes: words 4 v .. 4 v + 3 of the raw bytes, position weights 8 v + 1, 3, 5 and 7.
  /// The multiplies set a GPU's pace, so there are none but the squares': with S_k the k-th
  /// vector's word sum and P_k = S_0 + … + S_k, sum v_k S_k = first sum S_k + stride (K sum S_k -
  /// sum P_k) over the K vectors, and the odd weights sum to S + 2 (w1 + 2 w2 + 3 w3), the latter
  /// the sum of the suffix sums w1 + w2 + w3, w2 + w3 and w3: additions only, the rest once in
  /// fold_vectors(). Each square |w|^2, one 32 x 32 -> 64-bit multiply-add. All modulo 2^64, as
  /// word() sums.
  OPHOOK_KERNEL_FN void words_of_vector(Bits v) {
    const i64 w0 = static_cast<int>(static_cast<u32>(v.lo)), w1 = static_cast<int>(static_cast<u32>(v.lo >> 32));
    const i64 w2 = static_cast<int>(static_cast<u32>(v.hi)), w3 = static_cast<int>(static_cast<u32>(v.hi >> 32));
    const i64 r2 = w2 + w3, r1 = w1 + r2;
    vector_sums += static_cast<u64>(w0 + r1);
    running_sums += vector_sums;
    suffix_sums += static_cast<u64>(r1 + r2 + w3);
    part.by_value += square(w0) + square(w1) + square(w2) + square(w3);
    ++vectors;
  }

  /// Adds the position sum of the vectors words_of_vector() took, first, first + stride, …
  OPHOOK_KERNEL_FN void fold_vectors(u64 first, u64 stride) {
    const u64 weighted = first * vector_sums + stride * (static_cast<u64>(vectors) * vector_sums - running_sums);
    part.position += 8 * weighted + vector_sums + 2 * suffix_sums;
    vector_sums = running_sums = suffix_sums = 0, vectors = 0;
  }

  /// w * w for an int32 word: its magnitude squared, which is below 2^62 (|INT_MIN| is 2^31).
  OPHOOK_KERNEL_FN static u64 square(i64 w) {
#if defined(__CUDA_ARCH__)
    const u32 magnitude = static_cast<u32>(__sad(static_cast<int>(w), 0, 0u));  // one IABS: |INT_MIN| as 2^31
#else
    const u32 bits = static_cast<u32>(w);
    const u32 magnitude = w < 0 ? 0u - bits : bits;
#endif
    return static_cast<u64>(magnitude) * magnitude;
  }

  OPHOOK_KERNEL_FN Partial finish() const {
    Partial out = part;
    out.finite = finite, out.nonfinite = nonfinite, out.nan = nan;
    out.min = static_cast<double>(low) < out.min ? static_cast<double>(low) : out.min;
    out.max = static_cast<double>(high) > out.max ? static_cast<double>(high) : out.max;
    if (finite > 0) {
      const double n = static_cast<double>(finite);
      out.mean = shift + sum / n;
      const double m2 = squares - sum * sum / n;
      out.m2 = m2 > 0 ? m2 : 0.0;
    }
    return out;
  }
};

/// The smaller of two values, the larger: for floats a GPU's single min/max instruction, for
/// doubles a compare and select (a GPU has no double min/max, and fmin's NaN rule costs a call).
/// Either may be NaN only where FiniteMoments' sums are NaN too, so NaN rules never decide a result.
OPHOOK_KERNEL_FN float lesser(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fminf(a, b);
#else
  return std::fmin(a, b);
#endif
}
OPHOOK_KERNEL_FN float greater(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return std::fmax(a, b);
#endif
}
OPHOOK_KERNEL_FN double lesser(double a, double b) { return b < a ? b : a; }
OPHOOK_KERNEL_FN double greater(double a, double b) { return b > a ? b : a; }

/// A thread's moments taken on the bet that all its values are finite, as nearly every tensor's
/// are: per value (float, or double for the kinds Accumulator::value takes) a widening, two double
/// adds, a multiply-add, the min and the max, with no test, branch or select (Accumulator tests,
/// branches and selects for each value: two to three times the instructions, which set the GPU
/// kernel's pace). An Inf or NaN makes the sums non-finite (all_finite() then says the bet is
/// lost) and the share is read again by Accumulator, which counts them. Where the bet holds, both
/// give the same Partial bit for bit: the same shift (the share's first value, which Accumulator
/// takes as its first finite one) and the same sums in the same order.
template <typename Value>
struct FiniteMoments {
  Accumulator::Tally count = 0;
  double shift, sum = 0, squares = 0;
  Value low, high;

  OPHOOK_KERNEL_FN explicit FiniteMoments(Value first) : shift(first), low(first), high(first) {}

  OPHOOK_KERNEL_FN void take(Value v) {
    ++count;
    const double d = static_cast<double>(v) - shift;
    sum += d;
    squares += d * d;
    low = lesser(low, v);
    high = greater(high, v);
  }
  // Accumulator's names for the two value types (accumulate_values calls them).
  OPHOOK_KERNEL_FN void float_value(float v) { take(v); }
  OPHOOK_KERNEL_FN void value(double v) { take(v); }

  /// Inf - Inf and NaN - NaN are NaN: a non-finite value leaves sum or squares non-finite. So do
  /// float64 values near the end of double's range, whose squares overflow: such a share is read
  /// again too, and its Partial is the Accumulator's whatever the bet.
  OPHOOK_KERNEL_FN bool all_finite() const { return is_finite(sum) && is_finite(squares); }

  /// The Partial, with the fingerprint sums of `words` (Accumulator::finish()'s arithmetic).
  OPHOOK_KERNEL_FN Partial finish(const Partial& words) const {
    Partial out = words;
    out.finite = count, out.nan = out.nonfinite = 0;
    if (count > 0) {
      out.min = static_cast<double>(low), out.max = static_cast<double>(high);
      const double n = static_cast<double>(count);
      out.mean = shift + sum / n;
      const double m2 = squares - sum * sum / n;
      out.m2 = m2 > 0 ? m2 : 0.0;
    }
    return out;
  }
};

/// `into` takes in `other` (both Partials of disjoint elements).
OPHOOK_KERNEL_FN void merge(Partial& into, const Partial& other) {
  into.nan += other.nan;
  into.nonfinite += other.nonfinite;
  into.position += other.position;
  into.by_value += other.by_value;
  if (other.finite == 0) return;
  into.min = other.min < into.min ? other.min : into.min;
  into.max = other.max > into.max ? other.max : into.max;
  if (into.finite == 0) {
    into.finite = other.finite, into.mean = other.mean, into.m2 = other.m2;
    return;
  }
  const u64 total = into.finite + other.finite;
  const double delta = other.mean - into.mean;
  const double share = static_cast<double>(other.finite) / static_cast<double>(total);
  into.mean += delta * share;
  into.m2 += other.m2 + delta * delta * static_cast<double>(into.finite) * share;
  into.finite = total;
}

}  // namespace ophook::device::statistics_kernel
