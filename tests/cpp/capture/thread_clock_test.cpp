#include "ophook/capture/thread_clock.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

namespace ophook::core {
namespace {

/// A simulated machine: a 2.4 GHz counter that started 5 s before CLOCK_MONOTONIC's zero, and
/// kernel readings off by up to ±30 ns (what a pair of reads around the vDSO sees).
constexpr double kTicksPerNs = 2.4;
constexpr std::int64_t kMs = 1'000'000;

std::uint64_t ticks_at(std::int64_t true_ns) {
  return static_cast<std::uint64_t>(static_cast<double>(true_ns + 5'000 * kMs) * kTicksPerNs);
}

std::int64_t time_of(std::uint64_t ticks) {
  return static_cast<std::int64_t>(static_cast<double>(ticks) / kTicksPerNs) - 5'000 * kMs;
}

ClockPair pair_at(std::int64_t true_ns, std::int64_t error_ns = 0) {
  return {ticks_at(true_ns), true_ns + error_ns};
}

/// Deterministic reading errors in [-30, 30] ns.
std::int64_t reading_error(std::uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return static_cast<std::int64_t>(state >> 16) % 61 - 30;
}

TEST(ThreadClock, NoRateWithinAMillisecondOfTheOrigin) {
  const auto origin = pair_at(0);
  EXPECT_EQ(next_segment({}, pair_at(kMs / 2), origin).length_ticks, 0u);
  const auto segment = next_segment({}, pair_at(2 * kMs), origin);
  EXPECT_GT(segment.length_ticks, 0u);
  EXPECT_EQ(segment.anchor_ns, 2 * kMs);
}

TEST(ThreadClock, RejectsACounterThatIsNoClock) {
  const ClockPair origin{1000, 0};
  EXPECT_EQ(next_segment({}, ClockPair{1001, 5 * kMs}, origin).length_ticks, 0u);  // 5 ms in 1 tick
  EXPECT_EQ(next_segment({}, ClockPair{900, 5 * kMs}, origin).length_ticks, 0u);   // went back
}

// One thread reading the clock every 7 µs for 300 ms, starting a stretch whenever it leaves one,
// from noisy kernel readings: never back, close to the true time, closer as the rate settles.
TEST(ThreadClock, FollowsTheKernelClockAndNeverGoesBack) {
  const auto origin = pair_at(0, 25);
  ClockSegment segment;
  std::uint32_t noise = 12345;
  std::int64_t last = 0;
  int segments = 0;
  for (std::int64_t t = kMs; t < 300 * kMs;) {
    const auto ticks = ticks_at(t);
    std::int64_t value;
    if (ticks - segment.anchor_ticks < segment.length_ticks) {
      value = segment.ns_at(ticks);
    } else {
      const auto now = pair_at(t, reading_error(noise));
      const auto previous = segment;
      segment = next_segment(segment, now, origin);
      value = segment.length_ticks ? segment.anchor_ns : now.ns;
      if (previous.length_ticks) {  // not before the latest time the last stretch could give
        const auto latest = previous.ns_at(previous.anchor_ticks + previous.length_ticks - 1);
        ASSERT_GE(value, latest) << "at " << t;
      }
      ++segments;
    }
    ASSERT_GE(value, last) << "at " << t;
    ASSERT_LE(std::llabs(value - t), t < 20 * kMs ? 250 : 80) << "at " << t;
    last = value;
    // Every 7 µs, and once right after each stretch ends, where going back would show.
    const auto end_t = time_of(segment.anchor_ticks + segment.length_ticks) + 1;
    t = segment.length_ticks && t < end_t && end_t < t + 7'000 ? end_t : t + 7'000;
  }
  EXPECT_GT(segments, 250);
  EXPECT_LT(segments, 320);  // about one kernel reading per millisecond
}

TEST(ThreadClock, AStretchAheadOfTheKernelComesBackWithoutGoingBack) {
  const auto origin = pair_at(0);
  auto ahead = next_segment({}, pair_at(100 * kMs), origin);
  ahead.anchor_ns += 5'000;  // this thread's times run 5 µs ahead of the kernel's
  const auto at = 100 * kMs + 900'000;  // within `ahead`: it gave about at + 5 µs just now
  const auto next = next_segment(ahead, pair_at(at), origin);
  EXPECT_NEAR(next.anchor_ns, at + 5'000, 2);  // not the kernel's `at`: that would go back
  const auto end = next.anchor_ticks + next.length_ticks - 1;
  EXPECT_NEAR(next.ns_at(end), at + kMs, 2);  // back on the kernel's clock by the stretch's end
}

TEST(ThreadClock, AThreadIdleForAMinuteResumesOnTheKernelClock) {
  const auto origin = pair_at(0);
  auto old = next_segment({}, pair_at(10 * kMs), origin);
  old.mult += old.mult / 100'000;  // a rate 10 ppm fast: 600 µs ahead if carried over the minute
  const auto at = 60'000 * kMs;
  const auto next = next_segment(old, pair_at(at, -20), origin);
  EXPECT_EQ(next.anchor_ns, at - 20);
  EXPECT_NEAR(next.ns_at(next.anchor_ticks + next.length_ticks - 1), at - 20 + kMs, 2);
}

TEST(ThreadClock, SeesASuspendAndNotAnIdleThread) {
  const auto origin = pair_at(0);
  const auto last = pair_at(50 * kMs, 30);
  // Idle for a minute, readings off by tens of ns: the same rate.
  EXPECT_FALSE(counter_rate_changed(last, pair_at(60'050 * kMs, -30), origin));
  EXPECT_FALSE(counter_rate_changed(last, pair_at(51 * kMs), origin));
  // Suspended for 10 s: the counter ran on, CLOCK_MONOTONIC did not.
  const ClockPair resumed{ticks_at(10'051 * kMs), 51 * kMs};
  EXPECT_TRUE(counter_rate_changed(last, resumed, origin));
  // A counter reset to zero in the suspend.
  EXPECT_TRUE(counter_rate_changed(last, ClockPair{1000, 51 * kMs}, origin));
  // A counter 1% faster than before (another host), over a second.
  const ClockPair faster{last.ticks + static_cast<std::uint64_t>(1.01 * kTicksPerNs * 1e9),
                         last.ns + 1'000 * kMs};
  EXPECT_TRUE(counter_rate_changed(last, faster, origin));
  // No rate known yet (under a millisecond from the origin): nothing to compare with.
  EXPECT_FALSE(counter_rate_changed(pair_at(kMs / 2), resumed, origin));
}

// The real clock, whichever path this machine takes: within the kernel's readings around it.
TEST(ThreadClock, ReadsAgreeWithTheKernel) {
  ThreadClock clock;
  const auto start = monotonic_ns();
  std::int64_t last = 0;
  while (monotonic_ns() - start < 30 * kMs) {
    const auto before = monotonic_ns();
    const auto value = clock.now_ns();
    const auto after = monotonic_ns();
    ASSERT_GE(value, last);
    ASSERT_GE(value, before - 1'000);
    ASSERT_LE(value, after + 1'000);
    last = value;
  }
}

}  // namespace
}  // namespace ophook::core
