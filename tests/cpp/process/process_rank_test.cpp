#include "ophook/process/process_rank.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace ophook::core {
namespace {

// Sets RANK and OPHOOK_HELD_RANK for one test (nullptr: unset); both are unset afterwards.
class ProcessRankTest : public ::testing::Test {
 protected:
  static void environment(const char* rank, const char* held) {
    for (auto [name, value] : {std::pair{"RANK", rank}, std::pair{ProcessRank::kHeldRankVar, held}}) {
      if (value != nullptr) {
        ::setenv(name, value, 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
  static std::string held() {
    const char* value = std::getenv(ProcessRank::kHeldRankVar);
    return value ? value : "";
  }
  void TearDown() override { environment(nullptr, nullptr); }
};

TEST_F(ProcessRankTest, RankAtStartIsOwnAndExported) {
  environment("3", nullptr);
  ProcessRank rank;
  rank.at_start();
  EXPECT_EQ(rank.own(), 3);
  EXPECT_EQ(held(), "3");
  rank.at_start();  // a later run of the same process: its own export is no parent's
  EXPECT_EQ(rank.own(), 3);
  EXPECT_FALSE(rank.learn(5, true));
}

TEST_F(ProcessRankTest, RankHeldAboveIsInherited) {
  environment("3", "3");  // a subprocess or spawned DataLoader worker of rank 3
  ProcessRank rank;
  rank.at_start();
  EXPECT_EQ(rank.own(), -1);
  EXPECT_FALSE(rank.learn(3, true));
  EXPECT_TRUE(rank.learn(4, true));  // a rank of its own, which it then holds
  EXPECT_EQ(rank.own(), 4);
  EXPECT_EQ(held(), "4");
}

TEST_F(ProcessRankTest, NoNumberNoRank) {
  for (const char* text : {"", "x", "-1", "1x", " 1"}) {
    environment(text, nullptr);
    EXPECT_EQ(ProcessRank::from_environment(), -1) << text;
  }
  environment("12", nullptr);
  EXPECT_EQ(ProcessRank::from_environment(), 12);
}

TEST_F(ProcessRankTest, LearnedAfterTheStart) {
  environment(nullptr, nullptr);
  ProcessRank rank;
  rank.at_start();
  EXPECT_EQ(rank.own(), -1);
  EXPECT_FALSE(rank.learn(-1, true));
  EXPECT_TRUE(rank.learn(1, /*export_it=*/false));
  EXPECT_EQ(rank.own(), 1);
  EXPECT_EQ(held(), "");
  EXPECT_FALSE(rank.learn(1, true));
}

TEST_F(ProcessRankTest, ForkChildInheritsItsParentsRank) {
  environment(nullptr, nullptr);
  ProcessRank known;  // learned, not in RANK (torch.distributed's)
  known.at_start();
  known.learn(2, true);
  known.at_fork_child();
  EXPECT_EQ(known.own(), -1);
  EXPECT_FALSE(known.learn(2, true));

  environment("5", nullptr);
  ProcessRank unlearned;  // RANK set by the parent, not learned before the fork
  unlearned.at_fork_child();
  EXPECT_FALSE(unlearned.learn(ProcessRank::from_environment(), true));
  EXPECT_TRUE(unlearned.learn(6, true));  // the child's own (torch.multiprocessing with fork)
}

}  // namespace
}  // namespace ophook::core
