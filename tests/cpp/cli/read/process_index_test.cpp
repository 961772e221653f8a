// One process's index for `ophook report`: counted from records, merged over processes.
#include "read/process_index.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ophook::cli {
namespace {

TraceRecord call(std::int64_t seq, const std::string& op, std::int64_t step, std::int64_t dur_ns) {
  TraceRecord r;
  r.seq = seq, r.op = op, r.step = step, r.dur_ns = dur_ns, r.level = "torch_function";
  return r;
}

ArraySpec output_with_inf() {
  ArraySpec a;
  a.path = "outputs[0]";
  a.stats = StatsSpec{};
  a.stats->inf = 2;
  return a;
}

TEST(ProcessIndex, CountsOpsStepsAndCollectivesFromTheRecords) {
  std::vector<TraceRecord> records{call(0, "torch.add", 0, 10), call(1, "torch.mul", 0, 30), call(2, "torch.add", 1, 5),
                                   call(3, "torch.add", 4, 7)};
  records[1].phase = "forward";
  records[1].module = "Net.fc1";
  records[2].collective = CollectiveSpec{};
  records[2].collective->group = "0", records[2].collective->group_seq = 3;
  const ProcessIndex index = index_of_records(records);
  EXPECT_EQ(index.counts.calls, 4u);
  ASSERT_EQ(index.counts.ops.size(), 2u);
  EXPECT_EQ(index.counts.ops[0].op, "torch.add");
  EXPECT_EQ(index.counts.ops[0].calls, 3u);
  EXPECT_EQ(index.counts.ops[0].max_ns, 10);
  EXPECT_EQ(index.counts.total_ns, 52);
  EXPECT_EQ(index.counts.phases.at("none"), 3u);
  EXPECT_EQ(index.counts.modules.at("Net.fc1"), 1u);
  EXPECT_EQ(index.counts.steps, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 1}, {4, 4}}));
  EXPECT_EQ(index.collectives.at("0").calls, 1u);
  EXPECT_EQ(index.collectives.at("0").last_group_seq, 3);
  EXPECT_FALSE(index.first_nonfinite.has_value());
}

TEST(ProcessIndex, TheFirstCallMakingInfFromFiniteInputsIsBornAfterTheCollectivesBeforeIt) {
  std::vector<TraceRecord> records{call(0, "c10d.allreduce_", 0, 1), call(1, "torch.log", 0, 1),
                                   call(2, "c10d.allreduce_", 0, 1)};
  for (const int i : {0, 2}) {
    records[i].collective = CollectiveSpec{};
    records[i].collective->group = "0", records[i].collective->group_seq = i + 1;
  }
  records[1].arrays.push_back(output_with_inf());
  const ProcessIndex index = index_of_records(records);
  ASSERT_TRUE(index.first_nonfinite.has_value());
  EXPECT_FALSE(index.first_nonfinite->received);
  EXPECT_EQ(index.first_nonfinite->op, "torch.log");
  EXPECT_EQ(index.first_nonfinite->after_collective.at("0"), 1);
}

TEST(ProcessIndex, AddingProcessesSumsTheirCountsAndJoinsTheirSteps) {
  CallCounts run, a, b;
  a.count("torch.add", 10, "torch_function", "forward", nullptr, 0);
  a.count("torch.add", 10, "torch_function", "forward", nullptr, 1);
  b.count("torch.mul", 5, "torch_dispatch", "backward", nullptr, 2);
  b.count("torch.add", 40, "torch_function", "forward", nullptr, 7);
  run.add(a);
  run.add(b);
  EXPECT_EQ(run.calls, 4u);
  EXPECT_EQ(run.total_ns, 65);
  EXPECT_EQ(run.op("torch.add").calls, 3u);
  EXPECT_EQ(run.op("torch.add").max_ns, 40);
  EXPECT_EQ(run.levels.at("torch_dispatch"), 1u);
  EXPECT_EQ(run.steps, (std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 2}, {7, 7}}));
}

}  // namespace
}  // namespace ophook::cli
