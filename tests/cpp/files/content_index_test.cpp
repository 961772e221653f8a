// The content index nominates the first file of a content by digest; it stays within its bound by
// forgetting the oldest entries, and never keeps an entry for a file that was not written.
#include "files/content_index.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ophook::core {
namespace {

ContentDigest digest_of(std::uint64_t n) { return {n, ~n}; }

TEST(ContentIndex, RemembersTheFirstFileOfEachDigest) {
  ContentIndex index;
  EXPECT_EQ(index.find(digest_of(1)), nullptr);
  index.remember(digest_of(1), "op_numpy.add_output_000001.npy", std::nullopt);
  index.remember(digest_of(2), "op_numpy.add_output_000002.npy", std::nullopt);
  ASSERT_NE(index.find(digest_of(1)), nullptr);
  EXPECT_EQ(index.find(digest_of(1))->file, "op_numpy.add_output_000001.npy");
  EXPECT_EQ(index.find(digest_of(2))->file, "op_numpy.add_output_000002.npy");
  EXPECT_EQ(index.find({1, 1}), nullptr);  // the same low half is not the same digest
  index.remember(digest_of(1), "op_numpy.add_output_000009.npy", std::nullopt);  // replaced (EMLINK, a rewrite)
  EXPECT_EQ(index.find(digest_of(1))->file, "op_numpy.add_output_000009.npy");
  EXPECT_EQ(index.entries(), 2u);
}

TEST(ContentIndex, ForgetsOnlyTheFileItWasGiven) {
  ContentIndex index;
  index.remember(digest_of(1), "a.npy", std::nullopt);
  index.forget(digest_of(1), "b.npy");  // another file of that content: not the entry
  ASSERT_NE(index.find(digest_of(1)), nullptr);
  index.forget(digest_of(1), "a.npy");
  EXPECT_EQ(index.find(digest_of(1)), nullptr);
  EXPECT_EQ(index.forgotten(), 0u);  // forgotten for the bound only
}

TEST(ContentIndex, StatisticsComputedLaterJoinOnlyTheirOwnFilesEntry) {
  ContentIndex index;
  index.remember(digest_of(1), "a.npy", std::nullopt);  // planned: its statistics come with its file
  ArrayStats stats;
  stats.max = 7;
  index.add_stats(digest_of(1), "b.npy", stats);  // not the entry's file
  EXPECT_FALSE(index.find(digest_of(1))->stats.has_value());
  index.add_stats(digest_of(1), "a.npy", stats);
  ASSERT_TRUE(index.find(digest_of(1))->stats.has_value());
  EXPECT_EQ(index.find(digest_of(1))->stats->max, 7);
  index.add_stats(digest_of(2), "a.npy", stats);  // no entry: nothing made
  EXPECT_EQ(index.find(digest_of(2)), nullptr);
}

TEST(ContentIndex, PastItsBoundTheOldestEntriesGoFirst) {
  ContentIndex index(xxh3_128_digest, 64 << 10);  // a few hundred entries
  const std::string stem = "op_torch.nn.functional.linear_input1_";
  for (std::uint64_t i = 0; i < 10'000; ++i) index.remember(digest_of(i), stem + std::to_string(i) + ".npy", std::nullopt);
  EXPECT_GT(index.entries(), 100u);
  EXPECT_LT(index.entries(), 1000u);
  EXPECT_EQ(index.entries() + index.forgotten(), 10'000u);
  EXPECT_EQ(index.find(digest_of(0)), nullptr);
  ASSERT_NE(index.find(digest_of(9'999)), nullptr);
  // The newest entries are all still there, the oldest all gone.
  for (std::uint64_t i = 10'000 - index.entries(); i < 10'000; ++i) ASSERT_NE(index.find(digest_of(i)), nullptr) << i;
}

TEST(ContentIndex, ReplacementsDoNotGrowItsMemory) {
  ContentIndex index(xxh3_128_digest, 16 << 10);
  for (int i = 0; i < 100'000; ++i) index.remember(digest_of(7), "file" + std::to_string(i % 3) + ".npy", std::nullopt);
  EXPECT_EQ(index.entries(), 1u);
  EXPECT_EQ(index.find(digest_of(7))->file, "file0.npy");  // 99,999 % 3
}

TEST(ContentIndex, Xxh3DigestCoversEveryPartInOrder) {
  const std::string header = "header", data = "data";
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(header)), std::as_bytes(std::span(data))};
  const std::string joined = header + data, swapped = data + header;
  const std::span<const std::byte> one[] = {std::as_bytes(std::span(joined))};
  const std::span<const std::byte> other[] = {std::as_bytes(std::span(swapped))};
  EXPECT_EQ(xxh3_128_digest(parts), xxh3_128_digest(one));  // the same bytes, however split
  EXPECT_FALSE(xxh3_128_digest(parts) == xxh3_128_digest(other));
}

}  // namespace
}  // namespace ophook::core
