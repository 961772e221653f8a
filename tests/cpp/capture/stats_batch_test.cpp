#include "ophook/capture/stats_batch.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "support/stats_test_arrays.hpp"

namespace ophook::core {
namespace {

using test::expect_same;
using test::float_bytes;

// Every array's statistics, through the batch (both threads), equal compute_stats's.
void summarise_and_check(const std::vector<std::vector<std::byte>>& arrays, bool start_early) {
  StatsBatch batch;
  for (std::uint32_t i = 0; i < arrays.size(); ++i) ASSERT_TRUE(batch.add("<f4", arrays[i].data(), arrays[i].size(), i));
  if (start_early) batch.start();
  std::vector<bool> seen(arrays.size());
  batch.finish();
  batch.for_each_result([&](std::uint32_t index, const ArrayStats& stats) {
    seen.at(index) = true;
    expect_same(stats, compute_stats("<f4", arrays[index].data(), arrays[index].size()));
  });
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_TRUE(seen[i]) << i;
}

TEST(StatsBatch, ResultsEqualComputeStatsWhicheverThreadRanThem) {
  std::vector<std::vector<std::byte>> arrays;
  arrays.reserve(5);
  for (std::size_t i = 0; i < 5; ++i) arrays.push_back(float_bytes((1u << 16) + i * 1000, static_cast<float>(i)));
  summarise_and_check(arrays, true);
  summarise_and_check(arrays, false);  // never offered: all on this thread
}

TEST(StatsBatch, AFullBatchRefusesMoreJobs) {
  const auto bytes = float_bytes(64, 1);
  StatsBatch batch;
  std::uint32_t added = 0;
  while (batch.add("<f4", bytes.data(), bytes.size(), added)) ++added;
  EXPECT_GT(added, 2u);
  batch.finish();
  std::uint32_t results = 0;
  batch.for_each_result([&](std::uint32_t, const ArrayStats&) { ++results; });
  EXPECT_EQ(results, added);
}

// Batches of several threads share the one helper; each is destroyed the moment it finishes, so
// the sanitizer builds catch a helper that still touches one.
TEST(StatsBatch, ManyThreadsManyShortLivedBatches) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int round = 0; round < 60; ++round) {
        std::vector<std::vector<std::byte>> arrays;
        arrays.reserve(3);
        for (int i = 0; i < 3; ++i) arrays.push_back(float_bytes(4096 + static_cast<std::size_t>(round * 7 + i), static_cast<float>(t + i)));
        summarise_and_check(arrays, true);
      }
    });
  }
  for (auto& thread : threads) thread.join();
}

TEST(StatsBatch, AForkedChildGetsAHelperOfItsOwn) {
  std::vector<std::vector<std::byte>> arrays = {float_bytes(1u << 15, 1), float_bytes(1u << 15, 2)};
  summarise_and_check(arrays, true);  // the parent's helper is running
  // Asleep on its condition variable (past its linger) when the process forks: the child's
  // condition variable then says a thread waits on it, which none does.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a hang fails the test instead of stalling it
    bool same = true;
    for (int round = 0; round < 10; ++round) {  // the child's helper asleep between batches
      StatsBatch batch;
      for (std::uint32_t i = 0; i < 2; ++i) batch.add("<f4", arrays[i].data(), arrays[i].size(), i);
      batch.start();
      batch.finish();
      batch.for_each_result([&](std::uint32_t index, const ArrayStats& stats) {
        same = same && stats.xxh64 == compute_stats("<f4", arrays[index].data(), arrays[index].size()).xxh64;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    _exit(same ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace ophook::core
