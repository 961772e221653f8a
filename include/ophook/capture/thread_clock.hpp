#pragma once
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "ophook/export.hpp"

namespace ophook::core {

/// CLOCK_MONOTONIC in nanoseconds, read from the kernel (the vDSO).
OPHOOK_API std::int64_t monotonic_ns() noexcept;

/// One reading of the time-stamp counter and of CLOCK_MONOTONIC, taken back to back.
struct ClockPair {
  std::uint64_t ticks = 0;
  std::int64_t ns = 0;
};

/// A stretch of about a millisecond over which CLOCK_MONOTONIC is computed from the time-stamp
/// counter: ns = anchor_ns + ((ticks - anchor_ticks) * mult) >> kShift, for ticks in
/// [anchor_ticks, anchor_ticks + length_ticks). length_ticks == 0: no stretch.
struct ClockSegment {
  static constexpr int kShift = 32;
  std::uint64_t anchor_ticks = 0;
  std::int64_t anchor_ns = 0;
  std::uint64_t mult = 0;
  std::uint64_t length_ticks = 0;

  /// Only for ticks within the stretch (the product then fits in 64 bits).
  std::int64_t ns_at(std::uint64_t ticks) const noexcept {
    return anchor_ns + static_cast<std::int64_t>(((ticks - anchor_ticks) * mult) >> kShift);
  }
};

/// The stretch that starts at `now`, a pair just read, after `current`: its rate is measured from
/// `origin` (the thread's first pair), so it gets more exact as the run goes on; it starts no
/// earlier than the latest time `current` can have given, so that one thread's times never go back;
/// and when that puts it ahead of the measured clock, its slope brings it back to the clock by its
/// end. Empty when `now` is too close to `origin` (under a millisecond) for a rate.
OPHOOK_API ClockSegment next_segment(const ClockSegment& current, ClockPair now,
                                     ClockPair origin) noexcept;

/// Whether the counter no longer runs at the rate measured from `origin` to `last`, the previous
/// pair: predicted from `last` at that rate, `now` is off by more than 0.1% of the time between
/// them (plus 10 µs). The counter runs on while CLOCK_MONOTONIC stops in a system suspend, and a
/// virtual machine may move to a host whose counter differs.
OPHOOK_API bool counter_rate_changed(ClockPair last, ClockPair now, ClockPair origin) noexcept;

/// Whether the kernel keeps CLOCK_MONOTONIC on the time-stamp counter (clocksource "tsc"): it has
/// then checked that the counter runs at a constant rate and agrees between CPUs.
OPHOOK_API bool counter_keeps_monotonic() noexcept;

/// One thread's reader of CLOCK_MONOTONIC for call timing. Where the kernel's own clock runs on the
/// time-stamp counter, a reading is an `rdtsc`, a multiply and an add (a third of the vDSO's fenced
/// read; a recorded call reads the clock twice), and the kernel is asked again
/// once a millisecond; elsewhere every reading asks the kernel. While the counter keeps its rate,
/// times from one clock never go back, so a nested call's times lie within its parent's; when the
/// rate changes (a suspend), the clock measures it afresh. Not thread-safe: one per thread.
class ThreadClock {
 public:
  std::int64_t now_ns() noexcept {
#if defined(__x86_64__)
    const std::uint64_t ticks = __rdtsc();
    if (ticks - segment_.anchor_ticks < segment_.length_ticks) return segment_.ns_at(ticks);
    return start_segment();
#else
    return monotonic_ns();
#endif
  }

 private:
  /// Reads the kernel's clock, starts the next stretch when the counter can be used; the time.
  OPHOOK_API std::int64_t start_segment() noexcept;

  ClockSegment segment_;
  ClockPair origin_;  // the first pair, or the first since the counter's rate changed
  ClockPair last_;    // the latest pair
};

}  // namespace ophook::core
