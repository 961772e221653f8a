// The call that made a spike: the first call of the trigger step whose output left its range.
#include "report/spike_origin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ophook::cli {
namespace {

TraceRecord call(std::int64_t seq, std::int64_t step, std::string op, double size, std::uint64_t nan = 0) {
  TraceRecord r;
  r.seq = seq, r.step = step, r.op = std::move(op), r.module = "Net.fc", r.phase = "forward";
  ArraySpec out;
  out.path = "outputs[0]";
  out.stats = StatsSpec{};
  out.stats->min = -size / 2, out.stats->max = size, out.stats->nan = nan;
  r.arrays.push_back(out);
  return r;
}

/// Three steps of linear then relu, sizes a little different each step; step 3 as given.
std::vector<TraceRecord> steps_then(double linear, double relu, std::uint64_t relu_nan = 0) {
  std::vector<TraceRecord> records;
  std::int64_t seq = 0;
  for (std::int64_t step = 0; step < 3; ++step) {
    records.push_back(call(++seq, step, "linear", 2.0 + 0.3 * static_cast<double>(step)));
    records.push_back(call(++seq, step, "relu", 1.0 + 0.1 * static_cast<double>(step)));
  }
  records.push_back(call(++seq, 3, "linear", linear));
  records.push_back(call(++seq, 3, "relu", relu, relu_nan));
  return records;
}

TEST(SpikeOrigin, TheFirstCallOfTheStepAboveItsRangeIsNamedWithTheRange) {
  const auto records = steps_then(/*linear=*/2.5, /*relu=*/40.0);
  const auto origin = find_spike_origin(records, 3);
  ASSERT_TRUE(origin.has_value());
  EXPECT_EQ(origin->record->op, "relu");
  EXPECT_EQ(origin->value_path, "outputs[0]");
  EXPECT_DOUBLE_EQ(*origin->size, 40.0);
  EXPECT_DOUBLE_EQ(origin->low, 1.0);
  EXPECT_DOUBLE_EQ(origin->high, 1.2);
  EXPECT_EQ(origin->from_step, 0);
  EXPECT_EQ(origin->to_step, 2);
  EXPECT_EQ(origin->earlier, 3u);
}

TEST(SpikeOrigin, AnEarlierCallThatSpikedTooComesFirst) {
  EXPECT_EQ(find_spike_origin(steps_then(300.0, 40.0), 3)->record->op, "linear");
}

TEST(SpikeOrigin, VariationWithinTheMarginIsNoSpike) {
  EXPECT_FALSE(find_spike_origin(steps_then(2.9, 1.45), 3).has_value());
}

TEST(SpikeOrigin, ANewNanCountsEvenAtAnOrdinarySize) {
  const auto records = steps_then(2.5, 1.1, /*relu_nan=*/4);  // the origin points into them
  const auto origin = find_spike_origin(records, 3);
  ASSERT_TRUE(origin.has_value());
  EXPECT_EQ(origin->record->op, "relu");
  EXPECT_EQ(origin->nonfinite, 4u);
}

TEST(SpikeOrigin, TheSecondCallOfAnOpIsHeldAgainstTheSecondCallsOnly) {
  std::vector<TraceRecord> records;
  std::int64_t seq = 0;
  for (std::int64_t step = 0; step < 4; ++step) {
    records.push_back(call(++seq, step, "linear", 1.0));
    records.push_back(call(++seq, step, "linear", 100.0));  // a second linear, always large
  }
  EXPECT_FALSE(find_spike_origin(records, 3).has_value());
}

TEST(SpikeOrigin, WithoutTheStepsRecordsThereIsNoAnswer) {
  EXPECT_FALSE(find_spike_origin(steps_then(2.5, 40.0), 7).has_value());
  std::vector<TraceRecord> one_step_before{call(1, 0, "relu", 1.0), call(2, 1, "relu", 50.0)};
  EXPECT_FALSE(find_spike_origin(one_step_before, 1).has_value());  // one earlier call sets no range
}

TEST(SpikeOrigin, TheStepsInputsAreItsFirstCallWithInputFiles) {
  auto records = steps_then(2.5, 40.0);
  ArraySpec batch;
  batch.path = "args[0]", batch.file = "op_linear_input0_000008.npy";
  records[7].arrays.push_back(batch);  // step 3's relu
  EXPECT_EQ(first_input_files(records, 3), &records[7]);
  records[6].arrays.push_back(batch);  // step 3's linear, earlier
  EXPECT_EQ(first_input_files(records, 3), &records[6]);
  EXPECT_EQ(first_input_files(records, 2), nullptr);  // outputs and no files only
  records[5].arrays.push_back(batch);
  records[5].module.reset();  // a call outside any module: not what the model was given
  EXPECT_EQ(first_input_files(records, 2), nullptr);
}

}  // namespace
}  // namespace ophook::cli
