#include "ophook/stats/norms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

// A namespace of its own: the sanitizer builds compile the tests as unity blobs, beside
// stats_test.cpp's helpers and constants.
namespace ophook::core::norms_test {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::byte* bytes(const std::vector<float>& v) { return reinterpret_cast<const std::byte*>(v.data()); }
const std::byte* bytes(const std::vector<double>& v) { return reinterpret_cast<const std::byte*>(v.data()); }

template <typename T>
std::vector<T> uniform(std::size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> values(-3.0, 2.0);
  std::vector<T> out(n);
  for (auto& x : out) x = static_cast<T>(values(generator));
  return out;
}

// The element-by-element answer in long double, to hold the kernels' blocks and tails against.
template <typename T>
void expect_matches_one_by_one(const std::vector<T>& v, const NormStats& got) {
  long double squares = 0;
  double lo = kInf, hi = -kInf;
  for (T x : v) squares += static_cast<long double>(x) * x, lo = std::min<double>(lo, x), hi = std::max<double>(hi, x);
  EXPECT_NEAR(got.squares, static_cast<double>(squares), 1e-12 * static_cast<double>(squares));
  EXPECT_EQ(got.min, lo);
  EXPECT_EQ(got.max, hi);
  EXPECT_EQ(got.nan, 0u);
  EXPECT_EQ(got.inf, 0u);
}

TEST(NormStats, EveryLengthAroundTheKernelsBlocksMatchesTheElementsOneByOne) {
  for (std::size_t n : {1u, 15u, 16u, 17u, 4095u, 4096u, 4097u, 100003u}) {
    const auto f = uniform<float>(n, static_cast<unsigned>(n));
    expect_matches_one_by_one(f, norm_stats_f32(bytes(f), n));
    const auto d = uniform<double>(n, static_cast<unsigned>(n) + 1);
    expect_matches_one_by_one(d, norm_stats_f64(bytes(d), n));
  }
}

TEST(NormStats, ANanMakesTheNormAndTheExtremesNanAndIsCounted) {
  auto v = uniform<float>(5000, 7);
  v[4500] = std::numeric_limits<float>::quiet_NaN();
  v[17] = std::numeric_limits<float>::quiet_NaN();
  const NormStats got = norm_stats_f32(bytes(v), v.size());
  EXPECT_TRUE(std::isnan(got.squares) && std::isnan(got.min) && std::isnan(got.max));
  EXPECT_EQ(got.nan, 2u);
  EXPECT_EQ(got.inf, 0u);
}

TEST(NormStats, AnInfMakesTheNormInfiniteAndIsAnExtreme) {
  auto v = uniform<double>(3000, 8);
  v[2999] = -kInf;  // in the tail after the last whole block
  v[40] = kInf;     // inside a block the kernel hands back
  const NormStats got = norm_stats_f64(bytes(v), v.size());
  EXPECT_EQ(got.squares, kInf);
  EXPECT_EQ(got.min, -kInf);
  EXPECT_EQ(got.max, kInf);
  EXPECT_EQ(got.inf, 2u);
  EXPECT_EQ(got.nan, 0u);
}

TEST(NormStats, AnEmptyArrayHasNoExtremes) {
  const NormStats got = norm_stats_f32(nullptr, 0);
  EXPECT_EQ(got.squares, 0);
  EXPECT_TRUE(std::isnan(got.min) && std::isnan(got.max));
}

TEST(UpdateSquares, MatchesTheElementsOneByOneAndKeepsTheCurrentWeights) {
  for (std::size_t n : {3u, 16u, 4096u, 4113u}) {
    auto kept = uniform<float>(n, 1);
    const auto current = uniform<float>(n, 2);
    long double expected = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const long double d = static_cast<long double>(kept[i]) - current[i];
      expected += d * d;
    }
    const double got = update_squares_f32(reinterpret_cast<std::byte*>(kept.data()), bytes(current), n);
    EXPECT_NEAR(got, static_cast<double>(expected), 1e-12 * static_cast<double>(expected));
    EXPECT_EQ(kept, current);
  }
}

TEST(UpdateSquares, AnUnchangedWeightIsZeroAndANanSpreads) {
  auto kept = uniform<double>(100, 3);
  auto current = kept;
  EXPECT_EQ(update_squares_f64(reinterpret_cast<std::byte*>(kept.data()), bytes(current), kept.size()), 0.0);
  current[50] = kNan;
  EXPECT_TRUE(std::isnan(update_squares_f64(reinterpret_cast<std::byte*>(kept.data()), bytes(current), kept.size())));
  EXPECT_TRUE(std::isnan(kept[50]));  // kept as it is now, NaN and all
}

}  // namespace
}  // namespace ophook::core::norms_test
