// The report's lines on the first NaN/Inf across ranks: the culprit's rank, then the ranks each
// collective carried it to, within a bounded number of lines.
#include "render/rank_chain_text.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>

namespace ophook::cli {
namespace {

RankNonfinite received_at(std::int64_t seq, const std::string& op, std::int64_t step, std::int64_t group_seq) {
  RankNonfinite rank;
  rank.received = true;
  rank.seq = seq, rank.op = op, rank.step = step, rank.source = "-", rank.group = "0", rank.group_seq = group_seq;
  return rank;
}

ProcessRun rank_dir(int rank, std::optional<RankNonfinite> first) {
  ProcessRun process;
  process.label = "rank" + std::to_string(rank), process.rank = rank;
  process.index.first_nonfinite = std::move(first);
  return process;
}

TEST(RankChainText, TheChainNamesTheCulpritsRankThenTheRanksEachCollectiveReached) {
  RunReport report;
  RankNonfinite culprit;
  culprit.seq = 41, culprit.op = "autograd.SqrtBackward0", culprit.step = 3, culprit.source = "t.py:9:<module>";
  for (int rank : {0, 1, 3, 4, 6}) report.processes.push_back(rank_dir(rank, received_at(50, "c10d.allreduce_", 3, 9)));
  report.processes.push_back(rank_dir(2, culprit));
  const auto ranks = first_nonfinite_per_rank(report.processes);
  ASSERT_EQ(ranks.size(), 6u);
  const auto lines = describe_rank_chain(report, ranks, 12);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "rank2: made it, seq 41 autograd.SqrtBackward0 at t.py:9:<module> (step 3)");
  EXPECT_EQ(lines[1], "received by rank0-1,3-4,6 at c10d.allreduce_ #9 of group 0 (step 3)");
}

TEST(RankChainText, TheChainStaysWithinItsLinesWhateverTheRanks) {
  RunReport report;
  for (int rank = 0; rank < 100; ++rank) {  // each received at its own collective
    report.processes.push_back(rank_dir(rank, received_at(5, "c10d.broadcast_", 1, rank + 1)));
  }
  const auto lines = describe_rank_chain(report, first_nonfinite_per_rank(report.processes), 12);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[0], "no rank made it: every rank's first NaN/Inf was received (its culprit's rank wrote no record)");
  EXPECT_EQ(lines.back(), "… and 90 more ranks");
}

TEST(RankChainText, OneProcessHasNoChain) {
  RunReport report;
  RankNonfinite born;
  born.seq = 1, born.op = "numpy.log";
  report.processes.push_back(rank_dir(0, born));
  EXPECT_TRUE(describe_rank_chain(report, first_nonfinite_per_rank(report.processes), 12).empty());
}

TEST(RankChainText, RankRangesJoinConsecutiveRanksAndStopAtTheLimit) {
  const std::vector<std::int64_t> ranks{0, 1, 2, 3, 5, 9, 10};
  EXPECT_EQ(rank_ranges(ranks), "rank0-3,5,9-10");
  EXPECT_EQ(rank_ranges(ranks, 2), "rank0-3,5,…");
  EXPECT_EQ(rank_ranges(ranks, 3), "rank0-3,5,9-10");
  EXPECT_EQ(rank_ranges({}), "");
}

}  // namespace
}  // namespace ophook::cli
