// Where replicas part (report/replica_parting.hpp): over the steps since the last check that
// agreed, the first call only the parted rank made, and the first call apart — array inputs that
// agree and outputs that do not, or a collective whose outputs every member should hold alike.
#include "report/replica_parting.hpp"

#include <gtest/gtest.h>

namespace ophook::cli {
namespace {
namespace replica_parting_test {

/// An array known by its statistics; `value` stands for its contents (equal values, equal digests).
ArraySpec array(const std::string& path, double value) {
  ArraySpec a;
  a.path = path;
  a.shape = {4};
  a.dtype = "float32";
  a.stats = StatsSpec{value, value, value, 0.0, 0, 0, static_cast<std::uint64_t>(value * 1000 + 1), true};
  return a;
}

TraceRecord call(std::int64_t seq, std::int64_t step, const std::string& op, double input, double output) {
  TraceRecord r;
  r.seq = seq;
  r.t_ns = seq;
  r.step = step;
  r.op = op;
  r.level = "torch_function";
  r.arrays = {array("args[0]", input), array("outputs[0]", output)};
  return r;
}

TraceRecord allreduce(std::int64_t seq, std::int64_t step, double input, double output) {
  TraceRecord r = call(seq, step, "c10d.allreduce_", input, output);
  r.level = "collective";
  r.collective = CollectiveSpec{"0", seq, false};
  return r;
}

ReplicaParting parted_at(std::int64_t step, std::int64_t every) {
  ReplicaParting parting;
  parting.parted.step = step;
  parting.parted.every = every;
  parting.parted.ranks = {1};
  parting.parted.agreeing = {0};
  return parting;
}

TEST(CliReplicaParting, TheFirstCallWhoseInputsAgreeAndOutputsDoNot) {
  // Step 1 agreed; in step 2 the forward call sees each rank's own data (inputs differ: not apart),
  // the update gets equal inputs and makes different outputs on the parted rank.
  const std::vector<TraceRecord> parted{call(1, 1, "torch.mul", 0.5, 0.5), call(2, 2, "torch.mul", 0.3, 0.6),
                                        call(3, 2, "torch.add_", 0.7, 0.9)};
  const std::vector<TraceRecord> agreeing{call(1, 1, "torch.mul", 0.5, 0.5), call(2, 2, "torch.mul", 0.2, 0.4),
                                          call(3, 2, "torch.add_", 0.7, 0.8)};
  ReplicaParting parting = parted_at(2, 1);
  find_where_replicas_part(parting, parted, "", agreeing, "");
  EXPECT_TRUE(parting.compared);
  EXPECT_EQ(parting.from_step, 2);
  EXPECT_EQ(parting.values, 2u);  // the steps looked into: step 2 alone
  EXPECT_FALSE(parting.only_one);
  ASSERT_TRUE(parting.first_apart);
  EXPECT_EQ(parting.first_apart->op, "torch.add_");
  EXPECT_EQ(parting.first_apart->seq, 3);
  EXPECT_FALSE(parting.collective);
  ASSERT_FALSE(parting.reasons.empty());
  EXPECT_NE(parting.reasons.front().find("outputs[0]"), std::string::npos);
}

TEST(CliReplicaParting, ACollectiveWhoseOutputsDisagreeIsACommunicationFault) {
  // The ranks' gradients differ before the all-reduce (their data), its outputs must not.
  const std::vector<TraceRecord> parted{allreduce(1, 4, 0.25, 0.5), call(2, 4, "torch.add_", 0.5, 0.6)};
  const std::vector<TraceRecord> agreeing{allreduce(1, 4, 0.75, 0.55), call(2, 4, "torch.add_", 0.55, 0.65)};
  ReplicaParting parting = parted_at(5, 2);
  find_where_replicas_part(parting, parted, "", agreeing, "");
  EXPECT_EQ(parting.from_step, 4);
  ASSERT_TRUE(parting.first_apart);
  EXPECT_EQ(parting.first_apart->op, "c10d.allreduce_");
  EXPECT_TRUE(parting.collective);
}

TEST(CliReplicaParting, ACallOnlyThePartedRankMadeAndAnAgreeingRunNamesNothingApart) {
  const std::vector<TraceRecord> parted{call(1, 3, "torch.mul", 0.3, 0.6), call(2, 3, "torch.Tensor.__iadd__", 0.6, 0.7),
                                        call(3, 3, "torch.add_", 0.7, 0.8)};
  const std::vector<TraceRecord> agreeing{call(1, 3, "torch.mul", 0.2, 0.4), call(3, 3, "torch.add_", 0.7, 0.8)};
  ReplicaParting parting = parted_at(3, 1);
  find_where_replicas_part(parting, parted, "", agreeing, "");
  ASSERT_TRUE(parting.only_one);
  EXPECT_TRUE(parting.only_one_by_parted);
  EXPECT_EQ(parting.only_one->op, "torch.Tensor.__iadd__");
  EXPECT_FALSE(parting.first_apart);  // the forward call's inputs differ; the update agrees
}

TEST(CliReplicaParting, WithNoValueHeldByMostACallOfEitherRankCountsButNotALoggedLoss) {
  // Two ranks: rank 0 logs its loss (item(): no array output), rank 1 changes a weight.
  TraceRecord logged = call(2, 3, "torch.Tensor.item", 0.4, 0.0);
  logged.arrays.pop_back();
  logged.scalars = {ScalarSpec{"outputs[0]", 0.4}};
  const std::vector<TraceRecord> first{call(1, 3, "torch.mul", 0.3, 0.6), logged, call(4, 3, "torch.add_", 0.7, 0.8)};
  const std::vector<TraceRecord> second{call(1, 3, "torch.mul", 0.2, 0.4), call(3, 3, "torch.Tensor.__setitem__", 0.7, 0.71),
                                        call(4, 3, "torch.add_", 0.7, 0.8)};
  ReplicaParting parting = parted_at(3, 1);
  parting.parted.ranks = {0, 1};
  parting.parted.agreeing.clear();
  find_where_replicas_part(parting, first, "", second, "");
  ASSERT_TRUE(parting.only_one);
  EXPECT_FALSE(parting.only_one_by_parted);
  EXPECT_EQ(parting.only_one->op, "torch.Tensor.__setitem__");
}

TEST(CliReplicaParting, TheRanksComparedAreTheFirstPartedAndTheFirstAgreeing) {
  ProcessIndex::ReplicasParted parted;
  parted.ranks = {3, 5};
  parted.agreeing = {0, 1};
  EXPECT_EQ(parted_rank(parted), 3);
  EXPECT_EQ(agreeing_rank(parted), 0);
  parted.agreeing.clear();  // no value held by most: the next one that parted
  EXPECT_EQ(agreeing_rank(parted), 5);
}

}  // namespace replica_parting_test
}  // namespace
}  // namespace ophook::cli
