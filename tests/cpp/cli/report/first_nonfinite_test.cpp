// The first NaN/Inf across ranks: which culprit came first by the collectives' numbers.
#include "report/first_nonfinite.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace ophook::cli {
namespace {

RankNonfinite born(std::size_t process, std::int64_t step, std::map<std::string, std::int64_t> after,
                   std::int64_t t_ns = 0) {
  RankNonfinite rank;
  rank.process = process, rank.step = step, rank.t_ns = t_ns, rank.op = "torch.log", rank.source = "a.py:1:f";
  rank.seq = 10 + static_cast<std::int64_t>(process);
  rank.after_collective = std::move(after);
  return rank;
}

TEST(FirstNonfinite, ALowerCountInASharedGroupComesFirstWhateverTheClocks) {
  const auto a = born(0, 3, {{"0", 7}}, /*t_ns=*/900);
  const auto b = born(1, 3, {{"0", 8}}, /*t_ns=*/100);
  EXPECT_TRUE(causally_before(a, b));
  EXPECT_FALSE(causally_before(b, a));
  EXPECT_EQ(causal_first({b, a}), 1u);
}

TEST(FirstNonfinite, EqualCountsAreConcurrentAndFallBackToStepThenTime) {
  const auto a = born(0, 3, {{"0", 7}}, 900);
  const auto b = born(1, 3, {{"0", 7}}, 100);
  EXPECT_FALSE(causally_before(a, b));
  EXPECT_FALSE(causally_before(b, a));
  EXPECT_EQ(causal_first({a, b}), 1u);
  EXPECT_EQ(causal_first({born(0, 2, {{"0", 7}}, 900), b}), 0u);
}

TEST(FirstNonfinite, GroupsNotSharedSayNothing) {
  EXPECT_FALSE(causally_before(born(0, 1, {{"1", 2}}), born(1, 1, {{"2", 5}})));
}

TEST(FirstNonfinite, AReceivedOneIsNeverTheFirst) {
  auto received = born(0, 1, {});
  received.received = true;
  EXPECT_FALSE(causal_first({received}).has_value());
}

}  // namespace
}  // namespace ophook::cli
