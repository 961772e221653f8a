#pragma once
// Arrays for the units that summarise them (StatsBatch, the statistics memo), and the check that
// two summaries are the same bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "ophook/stats/stats.hpp"

namespace ophook::test {

/// `count` float32 values of a sine from `seed`, one of them NaN when there are more than 10.
inline std::vector<std::byte> float_bytes(std::size_t count, float seed) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = std::sin(seed + static_cast<float>(i) * 0.001f) * 100;
  if (count > 10) values[count / 3] = NAN;
  std::vector<std::byte> out(count * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline void expect_same(const core::ArrayStats& a, const core::ArrayStats& b) {
  EXPECT_EQ(a.xxh64, b.xxh64);
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.inf, b.inf);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);
}

}  // namespace ophook::test
