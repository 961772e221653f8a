// LCS alignment of two op sequences (`ophook compare` when the runs' calls differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "compare/align/alignment.hpp"

namespace ophook::cli {
namespace {

using Seq = std::vector<std::uint32_t>;

std::size_t reference_lcs(const Seq& a, const Seq& b) {
  std::vector<std::size_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// Every index appears exactly once, in order; pairs hold equal symbols. Returns the pair count.
std::size_t check_alignment(const Seq& a, const Seq& b, const std::vector<AlignStep>& steps) {
  std::int64_t next_a = 0, next_b = 0;
  std::size_t pairs = 0;
  for (const AlignStep& s : steps) {
    EXPECT_TRUE(s.base >= 0 || s.other >= 0);
    if (s.base >= 0) {
      EXPECT_EQ(s.base, next_a++);
    }
    if (s.other >= 0) {
      EXPECT_EQ(s.other, next_b++);
    }
    if (s.paired()) {
      EXPECT_EQ(a[s.base], b[s.other]);
      ++pairs;
    }
  }
  EXPECT_EQ(next_a, static_cast<std::int64_t>(a.size()));
  EXPECT_EQ(next_b, static_cast<std::int64_t>(b.size()));
  return pairs;
}

Seq random_seq(std::mt19937& rng, std::size_t n, std::uint32_t alphabet) {
  std::uniform_int_distribution<std::uint32_t> d(0, alphabet - 1);
  Seq s(n);
  for (auto& x : s) x = d(rng);
  return s;
}

TEST(CliAlignment, IdenticalSequencesPairOneToOne) {
  const Seq a{1, 2, 3, 2, 1};
  const auto steps = align_sequences(a, a);
  ASSERT_EQ(steps.size(), a.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].base, static_cast<std::int64_t>(i));
    EXPECT_EQ(steps[i].other, static_cast<std::int64_t>(i));
  }
}

TEST(CliAlignment, InsertionInNewIsOneSided) {
  const Seq base{0, 1, 2, 3}, other{0, 1, 9, 2, 3};
  const auto steps = align_sequences(base, other);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_TRUE(steps[1].paired());
  EXPECT_EQ(steps[2].base, -1);
  EXPECT_EQ(steps[2].other, 2);
  EXPECT_EQ(steps[3].base, 2);
  EXPECT_EQ(steps[3].other, 3);
}

TEST(CliAlignment, DeletionAndReplacement) {
  const Seq base{5, 6, 7, 8, 9}, other{5, 7, 4, 9};
  const auto steps = align_sequences(base, other);
  EXPECT_EQ(check_alignment(base, other, steps), 3u);  // 5, 7, 9
  // Within a gap, BASE-only steps come first: 8 (base) before 4 (new).
  std::vector<std::pair<std::int64_t, std::int64_t>> got;
  got.reserve(steps.size());
  for (const auto& s : steps) got.emplace_back(s.base, s.other);
  const std::vector<std::pair<std::int64_t, std::int64_t>> want{{0, 0},  {1, -1}, {2, 1},
                                                                {3, -1}, {-1, 2}, {4, 3}};
  EXPECT_EQ(got, want);
}

TEST(CliAlignment, EmptySides) {
  const Seq some{1, 2};
  EXPECT_EQ(align_sequences({}, {}).size(), 0u);
  EXPECT_EQ(check_alignment(some, {}, align_sequences(some, {})), 0u);
  EXPECT_EQ(check_alignment({}, some, align_sequences({}, some)), 0u);
}

TEST(CliAlignment, BitParallelRowsMatchReferenceAcrossWordBoundaries) {
  std::mt19937 rng(7);
  for (std::size_t n : {1u, 63u, 64u, 65u, 130u, 257u}) {
    for (std::uint32_t alphabet : {2u, 5u, 40u}) {
      const Seq a = random_seq(rng, n, alphabet), b = random_seq(rng, n + 3, alphabet);
      EXPECT_EQ(lcs_length(a, b), reference_lcs(a, b)) << n << " " << alphabet;
    }
  }
}

TEST(CliAlignment, HirschbergFindsAnOptimalAlignment) {
  std::mt19937 rng(11);
  // Large enough (n*m > 2^20) for the divide-and-conquer path, small enough for the reference.
  for (std::uint32_t alphabet : {3u, 30u, 1000u}) {
    const Seq a = random_seq(rng, 1500, alphabet), b = random_seq(rng, 1700, alphabet);
    const auto steps = align_sequences(a, b);
    EXPECT_EQ(check_alignment(a, b, steps), reference_lcs(a, b)) << alphabet;
  }
}

TEST(CliAlignment, LongRunsWithFewEditsAreFast) {
  std::mt19937 rng(3);
  const Seq base = random_seq(rng, 100'000, 50);
  Seq other = base;
  other.insert(other.begin() + 40'000, {777, 778});  // extra calls in NEW
  other.erase(other.begin() + 70'000);               // a call missing in NEW
  other[90'000] = 999;                               // a different op
  const auto start = std::chrono::steady_clock::now();
  const auto steps = align_sequences(base, other);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(check_alignment(base, other, steps), base.size() - 2);
  EXPECT_LT(seconds, 20.0);
}

TEST(CliAlignment, UnrelatedLongRunsStayWithinMemoryAndTime) {
  std::mt19937 rng(5);
  const Seq a = random_seq(rng, 20'000, 20), b = random_seq(rng, 20'000, 20);
  const auto steps = align_sequences(a, b);
  const std::size_t pairs = check_alignment(a, b, steps);
  EXPECT_EQ(pairs, lcs_length(a, b));
}

}  // namespace
}  // namespace ophook::cli
