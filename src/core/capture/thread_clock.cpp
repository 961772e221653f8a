#include "ophook/capture/thread_clock.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace ophook::core {
namespace {

constexpr std::int64_t kSegmentNs = 1'000'000;
constexpr std::int64_t kMinCalibrationNs = 1'000'000;  // a rate from a shorter span is too coarse

#if defined(__x86_64__)
/// Both clocks, the counter read on either side of the kernel's clock; of three tries the one with
/// the narrowest bracket (a try that was interrupted would skew the rate).
ClockPair read_pair() noexcept {
  ClockPair best;
  std::uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::uint64_t before = __rdtsc();
    const std::int64_t ns = monotonic_ns();
    const std::uint64_t after = __rdtsc();
    if (after - before < best_width) {
      best = {before + (after - before) / 2, ns};
      best_width = after - before;
    }
  }
  return best;
}
#endif

}  // namespace

std::int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

ClockSegment next_segment(const ClockSegment& current, ClockPair now, ClockPair origin) noexcept {
  const std::int64_t span_ns = now.ns - origin.ns;
  if (now.ticks <= origin.ticks || span_ns < kMinCalibrationNs) return {};
  const double ns_per_tick =
      static_cast<double>(span_ns) / static_cast<double>(now.ticks - origin.ticks);
  // Outside 100 MHz .. 100 GHz it is no time-stamp counter we know (and ns_at could overflow).
  if (!(ns_per_tick > 0.01 && ns_per_tick < 10)) return {};

  std::int64_t start = now.ns;
  if (current.length_ticks != 0) {
    // The latest time `current` can have given: at `now`, or at its end when the thread has been
    // idle since (its rate carried over an idle minute would be microseconds off).
    const auto last_ticks = std::clamp(now.ticks, current.anchor_ticks,
                                       current.anchor_ticks + current.length_ticks - 1);
    start = std::max(start, current.ns_at(last_ticks));
  }
  const std::int64_t ahead = std::min(start - now.ns, kSegmentNs / 2);
  const double slope =
      ns_per_tick * static_cast<double>(kSegmentNs - ahead) / static_cast<double>(kSegmentNs);

  ClockSegment next;
  next.anchor_ticks = now.ticks;
  next.anchor_ns = start;
  next.mult = static_cast<std::uint64_t>(std::llround(std::ldexp(slope, ClockSegment::kShift)));
  next.length_ticks = static_cast<std::uint64_t>(static_cast<double>(kSegmentNs) / ns_per_tick);
  return next;
}

bool counter_rate_changed(ClockPair last, ClockPair now, ClockPair origin) noexcept {
  const std::int64_t known_ns = last.ns - origin.ns;
  if (last.ticks <= origin.ticks || known_ns < kMinCalibrationNs) return false;  // no rate yet
  const double ns_per_tick =
      static_cast<double>(known_ns) / static_cast<double>(last.ticks - origin.ticks);
  // Signed: a counter that went back (reset in a suspend) is a change too.
  const double ticks = static_cast<double>(now.ticks) - static_cast<double>(last.ticks);
  const double predicted_ns = static_cast<double>(last.ns) + ticks * ns_per_tick;
  const double elapsed_ns = static_cast<double>(now.ns - last.ns);
  return std::abs(predicted_ns - static_cast<double>(now.ns)) > 10'000 + elapsed_ns / 1000;
}

bool counter_keeps_monotonic() noexcept {
#if defined(__x86_64__)
  static const bool keeps = [] {
    std::ifstream file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string name;
    return static_cast<bool>(file >> name) && name == "tsc";
  }();
  return keeps;
#else
  return false;
#endif
}

std::int64_t ThreadClock::start_segment() noexcept {
#if defined(__x86_64__)
  if (counter_keeps_monotonic()) {
    const ClockPair now = read_pair();
    if (origin_.ticks == 0 || counter_rate_changed(last_, now, origin_)) origin_ = now;
    last_ = now;
    segment_ = next_segment(segment_, now, origin_);
    return segment_.length_ticks != 0 ? segment_.anchor_ns : now.ns;
  }
#endif
  return monotonic_ns();
}

}  // namespace ophook::core
