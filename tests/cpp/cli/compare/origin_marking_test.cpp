// Origin marking in `ophook compare`: a differing call whose array inputs match introduced the
// difference (origin); one whose inputs already differed only passes it on (propagated).
#include <gtest/gtest.h>

#include "compare/op_totals.hpp"
#include "compare/values/record_compare.hpp"

namespace ophook::cli {
namespace {

/// An array value known by its statistics (as in a stats-mode run): `mean` stands for the values.
ArraySpec stats_array(const std::string& path, double mean, std::uint64_t digest) {
  ArraySpec a;
  a.path = path;
  a.shape = {4};
  a.dtype = "float32";
  a.stats = StatsSpec{0.0, 1.0, mean, 0.5, 0, 0, digest, true};
  return a;
}

/// An array value recorded by shape and dtype only (trace mode).
ArraySpec spec_array(const std::string& path) {
  ArraySpec a;
  a.path = path;
  a.shape = {4};
  a.dtype = "float32";
  return a;
}

TraceRecord call(std::vector<ArraySpec> arrays, std::vector<ScalarSpec> scalars = {}) {
  TraceRecord r;
  r.op = "numpy.multiply";
  r.arrays = std::move(arrays);
  r.scalars = std::move(scalars);
  return r;
}

PairResult compare(const TraceRecord& base, const TraceRecord& other) {
  const PairContext context{"", "", Tolerance{}, UninitializedMemory(), UninitializedMemory()};
  return compare_records(base, other, context, 1);
}

TEST(CliOriginMarking, EqualInputsAndDifferentOutputIsAnOrigin) {
  const auto pair = compare(call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.5, 2)}),
                            call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.7, 3)}));
  EXPECT_TRUE(pair.differs);
  EXPECT_EQ(pair.inputs, InputState::Match);
  EXPECT_TRUE(pair.origin());
  EXPECT_STREQ(pair.marking(), "origin");
  EXPECT_TRUE(pair.has_values);
}

TEST(CliOriginMarking, DifferentInputIsPropagated) {
  const auto pair = compare(call({stats_array("args[0]", 0.5, 1), stats_array("kwargs.out", 0.5, 4),
                                  stats_array("outputs[0]", 0.5, 2)}),
                            call({stats_array("args[0]", 0.5, 1), stats_array("kwargs.out", 0.9, 5),
                                  stats_array("outputs[0]", 0.7, 3)}));
  EXPECT_TRUE(pair.differs);
  EXPECT_EQ(pair.inputs, InputState::Differ);  // an out= array is an input (its values before)
  EXPECT_FALSE(pair.origin());
  EXPECT_STREQ(pair.marking(), "propagated");
}

TEST(CliOriginMarking, AChangedPlainArgumentMakesAnOrigin) {
  // np.add(var, eps) with another eps: the arrays came in equal, the difference enters here.
  const auto pair = compare(call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.5, 2)},
                                 {{"args[1]", 1e-5}}),
                            call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.51, 3)},
                                 {{"args[1]", 1e-2}}));
  EXPECT_TRUE(pair.origin());
}

TEST(CliOriginMarking, InputsWithoutValuesAreNeitherOriginNorPropagated) {
  const auto pair = compare(call({spec_array("args[0]"), stats_array("outputs[0]", 0.5, 2)}),
                            call({spec_array("args[0]"), stats_array("outputs[0]", 0.7, 3)}));
  EXPECT_TRUE(pair.differs);
  EXPECT_EQ(pair.inputs, InputState::NotRecorded);
  EXPECT_FALSE(pair.origin());
  // One input differing decides it even when another was not recorded.
  const auto differ = compare(call({spec_array("args[0]"), stats_array("args[1]", 0.1, 7)}),
                              call({spec_array("args[0]"), stats_array("args[1]", 0.9, 8)}));
  EXPECT_EQ(differ.inputs, InputState::Differ);
}

TEST(CliOriginMarking, TraceModePairsHaveNoValues) {
  const auto pair = compare(call({spec_array("args[0]"), spec_array("outputs[0]")}, {{"args[1]", 2}}),
                            call({spec_array("args[0]"), spec_array("outputs[0]")}, {{"args[1]", 2}}));
  EXPECT_FALSE(pair.differs);
  EXPECT_FALSE(pair.has_values);  // a plain argument is a parameter, not a value compared
}

TEST(CliOriginMarking, UninitializedInputsCountAsMatching) {
  TraceRecord empty_a = call({stats_array("outputs[0]", 1e30, 9)});
  empty_a.op = "torch.empty";
  TraceRecord empty_b = call({stats_array("outputs[0]", -7, 10)});
  empty_b.op = "torch.empty";
  const TraceRecord init_a = call({stats_array("args[0]", 1e30, 9), stats_array("outputs[0]", 0.5, 2)});
  const TraceRecord init_b = call({stats_array("args[0]", -7, 10), stats_array("outputs[0]", 0.6, 3)});
  const PairContext context{"", "", Tolerance{}, UninitializedMemory({empty_a, init_a}),
                            UninitializedMemory({empty_b, init_b})};
  const PairResult pair = compare_records(init_a, init_b, context, 1);
  EXPECT_EQ(pair.inputs, InputState::Match);
  EXPECT_TRUE(pair.origin());  // e.g. an initialiser drawing other random numbers
}

/// A process comparison of records paired 1:1, compared and summarised.
ProcessComparison summarised(std::vector<TraceRecord> base, std::vector<TraceRecord> other) {
  ProcessComparison p;
  p.base_name = p.new_name = "root";
  p.base = std::move(base);
  p.other = std::move(other);
  for (std::size_t i = 0; i < p.base.size(); ++i) {
    p.steps.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)});
    p.pair_index_of_step.push_back(i);
    PairResult pair = compare(p.base[i], p.other[i]);
    pair.base = pair.other = i;
    p.pairs.push_back(std::move(pair));
  }
  total_process(p);
  return p;
}

TEST(CliOriginMarking, FirstOriginFollowsTheFirstDivergentCall) {
  // Call 0 reads data made by unhooked code (already different): the first divergent call but
  // propagated. Call 1 gets equal inputs and makes different outputs: the first origin.
  const ProcessComparison p = summarised(
      {call({stats_array("args[0]", 0.1, 11), stats_array("outputs[0]", 0.2, 12)}),
       call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.5, 2)}),
       call({stats_array("args[0]", 0.5, 2), stats_array("outputs[0]", 0.6, 13)})},
      {call({stats_array("args[0]", 0.3, 21), stats_array("outputs[0]", 0.4, 22)}),
       call({stats_array("args[0]", 0.5, 1), stats_array("outputs[0]", 0.7, 3)}),
       call({stats_array("args[0]", 0.7, 3), stats_array("outputs[0]", 0.8, 23)})});
  ASSERT_TRUE(p.first_divergence && p.first_origin);
  EXPECT_EQ(p.first_divergence->step, 0u);
  EXPECT_EQ(p.first_origin->step, 1u);
  EXPECT_EQ(p.counts.differing_pairs, 3u);
  EXPECT_EQ(p.counts.origins, 1u);
  EXPECT_EQ(p.counts.values_compared, 3u);
  EXPECT_EQ(p.counts.verdict(), Verdict::Different);
}

TEST(CliOriginMarking, VerdictOverNoValuesIsNotSame) {
  const ProcessComparison p = summarised({call({spec_array("args[0]"), spec_array("outputs[0]")})},
                                         {call({spec_array("args[0]"), spec_array("outputs[0]")})});
  EXPECT_EQ(p.counts.values_compared, 0u);
  EXPECT_EQ(p.counts.verdict(), Verdict::ValuesNotRecorded);
  EXPECT_STREQ(to_string(p.counts.verdict()), "same_calls_values_not_recorded");
  const ProcessComparison with_values =
      summarised({call({stats_array("args[0]", 0.5, 1)})}, {call({stats_array("args[0]", 0.5, 1)})});
  EXPECT_EQ(with_values.counts.verdict(), Verdict::Same);
}

}  // namespace
}  // namespace ophook::cli
