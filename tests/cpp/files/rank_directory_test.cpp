#include "files/rank_directory.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "support/temp_files.hpp"

namespace ophook::core {
namespace {

namespace fs = std::filesystem;

using test::listing;
using test::spit;

constexpr int kRootPid = 1000;

// A process directory left by a process of the root `root_pid`.
void process_dir(const fs::path& dir, int root_pid) {
  fs::create_directories(dir);
  spit(dir / "trace.jsonl", "{}\n");
  spit(dir / "op_numpy.add_output_000000.npy", "old");
  spit(dir / "summary.json", "{\"pid\": 7, \"root_pid\": " + std::to_string(root_pid) + "}\n");
}

class RankDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::make_temp_dir("ophook_rank_directory_");
    dir_.emplace((root_ / "pid42").string(), OutputDir::Leaf::NoFollow);
    ASSERT_TRUE(dir_->write_file("trace.jsonl", "ours\n").ok);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  std::optional<OutputDir> dir_;
};

TEST_F(RankDirectoryTest, TakesAFreeName) {
  EXPECT_EQ(name_after_rank(*dir_, 1, kRootPid), "");
  EXPECT_EQ(dir_->path(), (root_ / "rank1").string());
  EXPECT_EQ(listing(root_), std::set<std::string>{"rank1"});
}

TEST_F(RankDirectoryTest, ReplacesWhatAnEarlierRunLeft) {
  process_dir(root_ / "rank1", kRootPid + 1);  // its summary names another root
  fs::create_directory(root_ / "rank2");       // empty
  EXPECT_EQ(name_after_rank(*dir_, 1, kRootPid), "");
  EXPECT_EQ(test::slurp(root_ / "rank1" / "trace.jsonl"), "ours\n");
  EXPECT_EQ(listing(root_ / "rank1"), std::set<std::string>{"trace.jsonl"});
  EXPECT_EQ(listing(root_), (std::set<std::string>{"rank1", "rank2"}));
}

TEST_F(RankDirectoryTest, NeverTouchesAProcessOfThisRun) {
  process_dir(root_ / "rank1", kRootPid);  // finished, with this run's root
  process_dir(root_ / "rank2", kRootPid + 1);
  fs::remove(root_ / "rank2" / "summary.json");  // still running, or killed: unknowable
  for (long rank : {1, 2}) {
    const auto why = name_after_rank(*dir_, rank, kRootPid);
    EXPECT_NE(why.find((root_ / ("rank" + std::to_string(rank))).string()), std::string::npos) << why;
    EXPECT_EQ(listing(root_ / ("rank" + std::to_string(rank))).size(), rank == 1 ? 3u : 2u);
  }
  EXPECT_EQ(dir_->path(), (root_ / "pid42").string());
}

TEST_F(RankDirectoryTest, KeepsItsNameBesideFilesAnEarlierRunDidNotWrite) {
  process_dir(root_ / "rank1", kRootPid + 1);
  spit(root_ / "rank1" / "notes.txt", "the user's");
  fs::create_directory(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "rank2");
  EXPECT_NE(name_after_rank(*dir_, 1, kRootPid).find("did not write"), std::string::npos);
  EXPECT_EQ(listing(root_ / "rank1"), std::set<std::string>{"notes.txt"});  // the earlier run's files go
  EXPECT_NE(name_after_rank(*dir_, 2, kRootPid).find("not a directory"), std::string::npos);
  EXPECT_EQ(dir_->path(), (root_ / "pid42").string());
  EXPECT_TRUE(fs::is_empty(root_ / "elsewhere"));
}

}  // namespace
}  // namespace ophook::core
