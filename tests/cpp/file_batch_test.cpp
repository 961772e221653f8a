#include "file_batch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

using test::slurp;

/// `count` jobs named f<i>.npy with header "h<i>:" and `payload` as data; the outcomes hold names.
struct Batch {
  Batch(std::size_t count, const std::string& payload) : outcomes(count), data(payload) {
    for (std::size_t i = 0; i < count; ++i) {
      outcomes[i].file = "f" + std::to_string(i) + ".npy";
      jobs.push_back({&outcomes[i], "h" + std::to_string(i) + ":",
                      {reinterpret_cast<const std::byte*>(data.data()), data.size()}, {}, false, {}, {}});
    }
  }
  std::vector<ArrayOutcome> outcomes;
  std::string data;
  std::vector<FileJob> jobs;
};

class FileBatchTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { root_ = test::make_temp_dir("ophook_file_batch_"); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

INSTANTIATE_TEST_SUITE_P(Helper, FileBatchTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "TwoThreads" : "WriterAlone"; });

TEST_P(FileBatchTest, WritesEveryFileOfEveryBatch) {
  OutputDir dir(root_.string());
  FileBatchWriter writer(dir, GetParam());
  for (int round = 0; round < 3; ++round) {  // the helper is reused from batch to batch
    Batch batch(200, "payload" + std::to_string(round));
    writer.write_all(batch.jobs);
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
      ASSERT_TRUE(batch.jobs[i].attempted && batch.jobs[i].result.ok) << i;
      EXPECT_EQ(slurp(root_ / batch.outcomes[i].file), "h" + std::to_string(i) + ":" + batch.data);
    }
  }
  writer.stop();
  Batch after(3, "after stop");  // alone from now on
  writer.write_all(after.jobs);
  EXPECT_EQ(slurp(root_ / "f2.npy"), "h2:after stop");
}

TEST_P(FileBatchTest, ABadNameSkipsThatFileOnly) {
  OutputDir dir(root_.string());
  FileBatchWriter writer(dir, GetParam());
  Batch batch(50, "x");
  batch.outcomes[10].file = "no/such/dir.npy";
  writer.write_all(batch.jobs);
  EXPECT_TRUE(batch.jobs[10].attempted);
  EXPECT_FALSE(batch.jobs[10].result.ok);
  EXPECT_TRUE(error_concerns_one_file(batch.jobs[10].result.error));
  for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
    if (i != 10) {
      EXPECT_TRUE(batch.jobs[i].attempted && batch.jobs[i].result.ok) << i;
    }
  }
}

TEST_P(FileBatchTest, AFailureOfTheMediumStopsTheBatch) {
  OutputDir dir(root_.string());
  FileBatchWriter writer(dir, GetParam());
  Batch batch(100, std::string(8192, 'x'));
  // Over RLIMIT_FSIZE a write fails with EFBIG (SIGXFSZ ignored), as on a full disk: every file
  // fails the same way, so the batch must stop after at most one failure per thread.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = old;
  limited.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  writer.write_all(batch.jobs);
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);

  std::size_t attempted = 0;
  for (const auto& job : batch.jobs) {
    if (!job.attempted) continue;
    ++attempted;
    EXPECT_FALSE(job.result.ok);
    EXPECT_EQ(job.result.error, EFBIG);
  }
  EXPECT_GE(attempted, 1u);
  EXPECT_LE(attempted, GetParam() ? 2u : 1u);
  EXPECT_TRUE(fs::is_empty(root_));  // no file, not even a partial one
}

}  // namespace
}  // namespace ophook::core
