// The totals of `ophook compare` (compare/op_totals.hpp): a process's counts and first calls, and
// the run's per-op rows merged from processes added in any order.
#include "compare/op_totals.hpp"

#include <gtest/gtest.h>

#include "compare/values/record_compare.hpp"

namespace ophook::cli {
namespace {
namespace op_totals_test {

ArraySpec output_of(double mean, std::uint64_t digest) {
  ArraySpec a;
  a.path = "outputs[0]";
  a.shape = {4};
  a.dtype = "float32";
  a.stats = StatsSpec{0.0, 1.0, mean, 0.5, 0, 0, digest, true};
  return a;
}

TraceRecord call(const std::string& op, double mean, std::uint64_t digest, std::int64_t t_ns) {
  TraceRecord r;
  r.op = op;
  r.seq = t_ns;
  r.t_ns = t_ns;
  r.arrays = {output_of(mean, digest)};
  return r;
}

/// (op, BASE mean, NEW mean) per call, paired one to one; equal means make equal digests.
ProcessComparison process(const std::vector<std::tuple<std::string, double, double>>& calls,
                          std::int64_t t0) {
  ProcessComparison p;
  p.base_name = p.new_name = "rank0";
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& [op, base_mean, new_mean] = calls[i];
    const auto t = t0 + static_cast<std::int64_t>(i);
    p.base.push_back(call(op, base_mean, static_cast<std::uint64_t>(base_mean * 1000), t));
    p.other.push_back(call(op, new_mean, static_cast<std::uint64_t>(new_mean * 1000), t));
    p.steps.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)});
    p.pair_index_of_step.push_back(i);
    const PairContext context{"", "", Tolerance{}, UninitializedMemory(), UninitializedMemory()};
    PairResult pair = compare_records(p.base[i], p.other[i], context, 1);
    pair.base = pair.other = i;
    p.pairs.push_back(std::move(pair));
  }
  total_process(p);
  return p;
}

TEST(CliOpTotals, AProcessKeepsItsCountsAndFirstCallsWhenItsRecordsGo) {
  ProcessComparison p = process({{"torch.add", 0.5, 0.5}, {"torch.mul", 0.5, 0.6}}, 100);
  p.release_details();
  EXPECT_FALSE(p.detailed);
  EXPECT_TRUE(p.base.empty() && p.steps.empty() && p.pairs.empty());
  EXPECT_EQ(p.base_calls(), 2u);
  EXPECT_EQ(p.new_calls(), 2u);
  EXPECT_EQ(p.counts.pairs, 2u);
  EXPECT_EQ(p.counts.differing_pairs, 1u);
  ASSERT_TRUE(p.first_divergence);
  EXPECT_EQ(p.first_divergence->step, 1u);
  EXPECT_EQ(p.first_divergence->base_seq, 101);
  EXPECT_EQ(p.first_divergence->clock, 101);
}

TEST(CliOpTotals, RowsMergedInAnyOrderReadAsInProcessOrder) {
  // Process 0 names mul before add; process 1 names add first and adds an op of its own.
  const ProcessComparison first = process({{"torch.mul", 0.5, 0.5}, {"torch.add", 0.5, 0.5}}, 0);
  const ProcessComparison second =
      process({{"torch.add", 0.5, 0.75}, {"torch.sub", 0.5, 0.5}, {"torch.mul", 0.5, 0.5}}, 50);
  ComparedOpTable in_order, reversed;
  in_order.add(0, first);
  in_order.add(1, second);
  reversed.add(1, second);
  reversed.add(0, first);
  const std::vector<ComparedOp> a = in_order.take(), b = reversed.take();
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  // The differing op first, then by first appearance: mul (process 0), sub (process 1).
  EXPECT_EQ(a[0].op, "torch.add");
  EXPECT_EQ(a[1].op, "torch.mul");
  EXPECT_EQ(a[2].op, "torch.sub");
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].op, b[i].op);
    EXPECT_EQ(a[i].pairs, b[i].pairs);
    EXPECT_EQ(a[i].differing, b[i].differing);
    EXPECT_EQ(a[i].max_abs, b[i].max_abs);
  }
  EXPECT_EQ(a[0].pairs, 2u);
  EXPECT_EQ(a[0].differing, 1u);
  EXPECT_EQ(a[1].pairs, 2u);
  EXPECT_TRUE(a[0].has_errors);
  EXPECT_DOUBLE_EQ(a[0].max_abs, 0.25);  // |0.75 - 0.5|: statistics give the mean's difference
}

TEST(CliOpTotals, TheRunsEarliestCallIsByBasesClock) {
  CompareResult result;
  result.processes.push_back(process({{"torch.add", 0.5, 0.5}, {"torch.mul", 0.5, 0.6}}, 100));
  result.processes.push_back(process({{"torch.add", 0.5, 0.7}}, 10));
  ComparedOpTable ops;
  for (std::size_t i = 0; i < result.processes.size(); ++i) ops.add(i, result.processes[i]);
  total_runs(result, ops);
  ASSERT_TRUE(result.first_divergence);
  EXPECT_EQ(result.first_divergence->process, 1u);
  EXPECT_EQ(result.first_divergence->step, 0u);
  EXPECT_EQ(result.counts.pairs, 3u);
  EXPECT_EQ(result.base_calls, 3u);
}

}  // namespace op_totals_test
}  // namespace
}  // namespace ophook::cli
