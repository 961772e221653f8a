#include "capture/stats_memo.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "stats/float_blocks.hpp"  // xxhash.h, inlined
#include "support/stats_test_arrays.hpp"

namespace ophook::core {
namespace {

using test::expect_same;
using test::float_bytes;

// remembered_stats(...) and whether it gave statistics back rather than computing them.
std::pair<ArrayStats, bool> summarise(std::string_view descr, const std::byte* data, std::size_t nbytes) {
  const auto before = stats_memo_counts();
  const ArrayStats stats = remembered_stats(descr, data, nbytes);
  const auto after = stats_memo_counts();
  EXPECT_EQ(after.computed + after.remembered, before.computed + before.remembered + 1);
  return {stats, after.remembered > before.remembered};
}

TEST(ContentBlocks, HashedInTheStatisticsPassAsXxh3OfEachBlock) {
  // Every element type's pass (the block kernels, element by element, the other byte order, no
  // statistics at all) hashes every block, the last one short, without changing the statistics.
  const auto bytes = float_bytes(3 * (kContentBlockBytes / 4) + 1001, 1);
  for (const char* descr : {"<f4", "<f8", ">f4", "<i2", "|u1", "|b1", "<c8", "|V12"}) {
    for (const std::size_t nbytes : {bytes.size(), bytes.size() - 3, kContentBlockBytes, std::size_t{100}}) {
      std::vector<std::uint64_t> hashes(content_block_count(nbytes) + 1, 7);
      expect_same(compute_stats(descr, bytes.data(), nbytes, hashes.data()), compute_stats(descr, bytes.data(), nbytes));
      for (std::size_t i = 0; i + 1 < hashes.size(); ++i) {
        const std::size_t at = i * kContentBlockBytes;
        EXPECT_EQ(hashes[i], XXH3_64bits(bytes.data() + at, std::min(kContentBlockBytes, nbytes - at)))
            << descr << " " << nbytes << " block " << i;
      }
      EXPECT_EQ(hashes.back(), 7u) << descr << " " << nbytes;  // nothing past the last block
    }
  }
}

TEST(ContentBlocks, EveryInstructionSetHashesAlike) {
  const auto bytes = float_bytes(20000, 2);
  const auto expected = XXH3_64bits(bytes.data(), bytes.size());
  EXPECT_EQ(float_blocks::baseline_kernels().content_hash(bytes.data(), bytes.size()), expected);
  // Each instruction set this build has and this CPU runs (CI's machines differ: some lack AVX-512).
  const std::pair<const float_blocks::Kernels*, bool> sets[] = {
      {float_blocks::avx2_kernels(), __builtin_cpu_supports("avx2") != 0},
      {float_blocks::avx512_kernels(), __builtin_cpu_supports("avx512f") != 0}};
  for (const auto& [kernels, runs_here] : sets) {
    if (kernels != nullptr && runs_here) {
      EXPECT_EQ(kernels->content_hash(bytes.data(), bytes.size()), expected);
    }
  }
}

TEST(StatsMemo, TheSameContentAtTheSamePlaceIsNotSummarisedAgain) {
  auto bytes = float_bytes(5 * (kContentBlockBytes / 4) + 17, 3);
  const auto [first, first_remembered] = summarise("<f4", bytes.data(), bytes.size());
  EXPECT_FALSE(first_remembered);
  expect_same(first, compute_stats("<f4", bytes.data(), bytes.size()));
  const auto [again, remembered] = summarise("<f4", bytes.data(), bytes.size());
  EXPECT_TRUE(remembered);
  expect_same(again, first);
}

TEST(StatsMemo, AnyChangedByteIsSeen) {
  // One byte changed in the first block, a middle one, the short last one: written by no one the
  // memo hears from, as a write through `.data` or a NumPy view is.
  auto bytes = float_bytes(5 * (kContentBlockBytes / 4) + 17, 4);
  for (const std::size_t at : {std::size_t{0}, 2 * kContentBlockBytes + 5, bytes.size() - 1}) {
    summarise("<f4", bytes.data(), bytes.size());
    bytes[at] ^= std::byte{0x40};
    const auto [stats, remembered] = summarise("<f4", bytes.data(), bytes.size());
    EXPECT_FALSE(remembered) << at;
    expect_same(stats, compute_stats("<f4", bytes.data(), bytes.size()));
  }
}

TEST(StatsMemo, ContentChangedBetweenReadsIsRememberedAtEveryRead) {
  // An activation: written by one call (new content at the same place every step), read by the
  // next ones.
  auto bytes = float_bytes(3 * (kContentBlockBytes / 4), 8);
  for (int step = 0; step < 40; ++step) {
    bytes[100] = static_cast<std::byte>(step);
    EXPECT_FALSE(summarise("<f4", bytes.data(), bytes.size()).second) << step;
    EXPECT_TRUE(summarise("<f4", bytes.data(), bytes.size()).second) << step;
  }
}

TEST(StatsMemo, ContentThatStopsChangingIsRememberedAgain) {
  // Changed before every summary, it is hashed only now and then; once it stays, it is remembered
  // again within one retry's interval.
  auto bytes = float_bytes(3 * (kContentBlockBytes / 4), 9);
  for (int step = 0; step < 40; ++step) {
    bytes[100] = static_cast<std::byte>(step);
    EXPECT_FALSE(summarise("<f4", bytes.data(), bytes.size()).second) << step;
  }
  int computed = 0;
  while (!summarise("<f4", bytes.data(), bytes.size()).second) ASSERT_LE(++computed, 17);
  expect_same(summarise("<f4", bytes.data(), bytes.size()).first, compute_stats("<f4", bytes.data(), bytes.size()));
}

TEST(StatsMemo, AnotherDtypeOrSizeAtTheSamePlaceIsSummarised) {
  auto bytes = float_bytes(4 * (kContentBlockBytes / 4), 5);
  summarise("<f4", bytes.data(), bytes.size());
  auto [as_int, remembered] = summarise("<i4", bytes.data(), bytes.size());
  EXPECT_FALSE(remembered);
  expect_same(as_int, compute_stats("<i4", bytes.data(), bytes.size()));
  auto [shorter, shorter_remembered] = summarise("<i4", bytes.data(), bytes.size() - 4096);
  EXPECT_FALSE(shorter_remembered);
  expect_same(shorter, compute_stats("<i4", bytes.data(), bytes.size() - 4096));
}

TEST(StatsMemo, SmallArraysAreSummarisedEveryTimeAndNotCounted) {
  const auto bytes = float_bytes(1000, 6);
  const auto before = stats_memo_counts();
  for (int i = 0; i < 2; ++i) {
    expect_same(remembered_stats("<f4", bytes.data(), bytes.size()), compute_stats("<f4", bytes.data(), bytes.size()));
  }
  EXPECT_EQ(stats_memo_counts().computed, before.computed);
  EXPECT_EQ(stats_memo_counts().remembered, before.remembered);
}

TEST(StatsMemo, KeepsOnlyTheArraysUsedLast) {
  // 4097 arrays at 4097 addresses (overlapping, 8 bytes apart): the first is forgotten, the
  // memory stays bounded, the last is still known.
  constexpr std::size_t kArrays = 4097;
  const auto bytes = float_bytes(kContentBlockBytes / 4 + kArrays * 2, 7);
  for (std::size_t i = 0; i < kArrays; ++i) summarise("<f4", bytes.data() + 8 * i, kContentBlockBytes);
  EXPECT_TRUE(summarise("<f4", bytes.data() + 8 * (kArrays - 1), kContentBlockBytes).second);
  EXPECT_FALSE(summarise("<f4", bytes.data(), kContentBlockBytes).second);
}

}  // namespace
}  // namespace ophook::core
