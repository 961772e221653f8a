// FileThreads runs every job of a batch exactly once, on the writer and helper threads at once,
// batch after batch; do_file_job writes or links one file.
#include "files/file_threads.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "files/file_batch.hpp"
#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class FileThreadsTest : public ::testing::TestWithParam<unsigned> {};

INSTANTIATE_TEST_SUITE_P(Helpers, FileThreadsTest, ::testing::Values(0U, 1U, 3U),
                         [](const auto& info) { return std::to_string(info.param) + "Helpers"; });

TEST_P(FileThreadsTest, RunsEveryJobOnceOnAsManyThreadsAsAllowed) {
  FileThreads threads(GetParam());
  for (int round = 0; round < 3; ++round) {  // the helpers are reused from batch to batch
    std::vector<std::atomic<int>> runs(40);
    std::mutex mutex;
    std::set<std::thread::id> ids;
    threads.run(runs.size(), [&](std::size_t i) {
      runs[i].fetch_add(1);
      {
        std::lock_guard lock(mutex);
        ids.insert(std::this_thread::get_id());
      }
      std::this_thread::sleep_for(2ms);  // a file's wait for the kernel: the other threads go on
    });
    for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i;
    EXPECT_TRUE(ids.count(std::this_thread::get_id()));
    if (GetParam() == 0) {
      EXPECT_EQ(ids.size(), 1u);
    } else {
      EXPECT_GE(ids.size(), 2u);
      EXPECT_LE(ids.size(), GetParam() + 1);
    }
  }
  // Work not worth sharing stays on the calling thread.
  std::set<std::thread::id> alone;
  threads.run(10, [&](std::size_t) { alone.insert(std::this_thread::get_id()); }, /*share=*/false);
  EXPECT_EQ(alone, std::set{std::this_thread::get_id()});
  threads.stop();  // alone from now on
  std::set<std::thread::id> after;
  threads.run(10, [&](std::size_t) { after.insert(std::this_thread::get_id()); });
  EXPECT_EQ(after, std::set{std::this_thread::get_id()});
}

TEST(FileThreadsDefault, HalfTheUsableCpusAtLeastOneAtMostSevenUnlessABenchmarkSetsThem) {
  cpu_set_t cpus;
  ASSERT_EQ(::sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const auto usable = static_cast<unsigned>(CPU_COUNT(&cpus));
  EXPECT_EQ(FileThreads::default_helpers(), std::clamp(usable / 2, 1U, 7U));
  EXPECT_EQ(FileThreads::default_helpers(0), 0U);
  EXPECT_EQ(FileThreads::default_helpers(3), 3U);
  EXPECT_EQ(FileThreads::default_helpers(99), 7U);
}

TEST(FileJobTest, WritesTheFileOrLinksAnEqualOneAndABadNameConcernsThatFileOnly) {
  const auto root = test::make_temp_dir("ophook_file_job_");
  {
    OutputDir dir(root.string());
    const std::string data = "payload";
    const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(data.data()), data.size()};
    ArrayOutcome a, b, bad;
    a.file = "a.npy", b.file = "b.npy", bad.file = "no/such/dir.npy";
    auto job = [&](ArrayOutcome& outcome, std::string same_as) {
      FileJob j;
      j.outcome = &outcome, j.header = "h:", j.data = bytes, j.same_as = std::move(same_as);
      return j;
    };
    auto write = job(a, "");
    ASSERT_TRUE(do_file_job(dir, write));
    EXPECT_TRUE(write.attempted && write.result.ok);
    EXPECT_EQ(test::slurp(root / "a.npy"), "h:payload");
    auto link = job(b, "a.npy");
    ASSERT_TRUE(do_file_job(dir, link));
    EXPECT_EQ(link.link.outcome, OutputDir::Link::Made);
    EXPECT_TRUE(fs::equivalent(root / "a.npy", root / "b.npy"));
    auto misnamed = job(bad, "");
    EXPECT_TRUE(do_file_job(dir, misnamed));  // the medium is fine
    EXPECT_FALSE(misnamed.result.ok);
    EXPECT_TRUE(error_concerns_one_file(misnamed.result.error));
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace ophook::core
