// compare's memo of file pairs: two names of the same two files (hard links, as a run that stores
// content once leaves them) are compared once, even by threads asking at the same moment; files
// of one name are not remembered; an error reaches every caller of the pair.
#include "compare/values/file_pair_memo.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/temp_files.hpp"

namespace ophook::cli {
namespace {

namespace fs = std::filesystem;

class FilePairMemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::make_temp_dir("ophook_pair_memo_");
    for (const char* name : {"a1", "b1", "single"}) std::ofstream(root_ / name) << name;
    fs::create_hard_link(root_ / "a1", root_ / "a2");
    fs::create_hard_link(root_ / "b1", root_ / "b2");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FilePairMemoTest, LinkedNamesOfOnePairAreComparedOnce) {
  FilePairMemo memo;
  std::atomic<int> comparisons{0};
  auto compare = [&] {
    ++comparisons;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
    ArrayDiff diff;
    diff.max_abs = 0.5;
    return diff;
  };
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      const auto diff = memo.compare(root_ / (i % 2 ? "a1" : "a2"), root_ / (i < 2 ? "b1" : "b2"), compare);
      EXPECT_EQ(diff.max_abs, 0.5);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(comparisons.load(), 1);
  memo.compare(root_ / "b1", root_ / "a1", compare);  // the other way round is another pair
  EXPECT_EQ(comparisons.load(), 2);
}

TEST_F(FilePairMemoTest, FilesOfOneNameAreComparedEveryTime) {
  FilePairMemo memo;
  int comparisons = 0;
  auto compare = [&] { return ++comparisons, ArrayDiff{}; };
  memo.compare(root_ / "single", root_ / "b1", compare);
  memo.compare(root_ / "single", root_ / "b2", compare);
  memo.compare(root_ / "missing", root_ / "b2", compare);
  EXPECT_EQ(comparisons, 3);
}

TEST_F(FilePairMemoTest, AnErrorReachesEveryCallerOfThePair) {
  FilePairMemo memo;
  int comparisons = 0;
  auto failing = [&]() -> ArrayDiff {
    ++comparisons;
    throw std::runtime_error("corrupt a1");
  };
  EXPECT_THROW(memo.compare(root_ / "a1", root_ / "b1", failing), std::runtime_error);
  EXPECT_THROW(memo.compare(root_ / "a2", root_ / "b2", failing), std::runtime_error);
  EXPECT_EQ(comparisons, 1);
}

}  // namespace
}  // namespace ophook::cli
