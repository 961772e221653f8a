// The report's lines on the first NaN/Inf across ranks: the culprit's rank, then the ranks each
// collective carried it to, within a bounded number of lines.
#include "render/rank_chain_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace ophook::cli {
namespace {

using nlohmann::json;

ProcessRun rank_dir(int rank, json summary) {
  ProcessRun process;
  process.label = "rank" + std::to_string(rank);
  process.summary = std::move(summary);
  return process;
}

TEST(RankChainText, TheChainNamesTheCulpritsRankThenTheRanksEachCollectiveReached) {
  RunReport report;
  const json culprit = {{"seq", 41}, {"op", "autograd.SqrtBackward0"}, {"step", 3}, {"source", "t.py:9:<module>"}};
  for (int rank : {0, 1, 3, 4, 6}) {
    report.processes.push_back(rank_dir(rank, {{"first_nonfinite", nullptr},
                                               {"first_received_nonfinite",
                                                {{"seq", 50}, {"op", "c10d.allreduce_"}, {"step", 3}, {"source", "-"},
                                                 {"group", "0"}, {"group_seq", 9}}}}));
  }
  report.processes.push_back(rank_dir(2, {{"first_nonfinite", culprit}, {"first_received_nonfinite", nullptr}}));
  const auto ranks = first_nonfinite_per_rank(report);
  ASSERT_EQ(ranks.size(), 6u);
  const auto lines = describe_rank_chain(report, ranks, 12);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "rank2: made it, seq 41 autograd.SqrtBackward0 at t.py:9:<module> (step 3)");
  EXPECT_EQ(lines[1], "received by rank0-1,3-4,6 at c10d.allreduce_ #9 of group 0 (step 3)");
}

TEST(RankChainText, TheChainStaysWithinItsLinesWhateverTheRanks) {
  RunReport report;
  for (int rank = 0; rank < 100; ++rank) {  // each received at its own collective
    report.processes.push_back(rank_dir(rank, {{"first_nonfinite", nullptr},
                                               {"first_received_nonfinite",
                                                {{"seq", 5}, {"op", "c10d.broadcast_"}, {"step", 1}, {"source", "-"},
                                                 {"group", "0"}, {"group_seq", rank + 1}}}}));
  }
  const auto lines = describe_rank_chain(report, first_nonfinite_per_rank(report), 12);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[0], "no rank made it: every rank's first NaN/Inf was received (its culprit's rank wrote no record)");
  EXPECT_EQ(lines.back(), "… and 90 more ranks");
}

TEST(RankChainText, OneProcessHasNoChain) {
  RunReport report;
  report.processes.push_back(rank_dir(0, {{"first_nonfinite", {{"seq", 1}, {"op", "numpy.log"}}}}));
  EXPECT_TRUE(describe_rank_chain(report, first_nonfinite_per_rank(report), 12).empty());
}

}  // namespace
}  // namespace ophook::cli
