// Pairing the records of two processes thread by thread and level by level (`ophook compare`).
#include <gtest/gtest.h>

#include <utility>

#include "compare/align/record_alignment.hpp"

namespace ophook::cli {
namespace {

/// Records from (tid, op) pairs, in seq order.
std::vector<TraceRecord> records(const std::vector<std::pair<int, std::string>>& calls) {
  std::vector<TraceRecord> out;
  for (const auto& [tid, op] : calls) {
    TraceRecord r;
    r.seq = static_cast<std::int64_t>(out.size());
    r.tid = tid;
    r.op = op;
    out.push_back(std::move(r));
  }
  return out;
}

using Steps = std::vector<std::pair<std::int64_t, std::int64_t>>;

Steps steps_of(const RecordAlignment& a) {
  Steps out;
  for (const AlignStep& s : a.steps) out.emplace_back(s.base, s.other);
  return out;
}

TEST(CliRecordAlignment, EqualSequencesPairOneToOne) {
  const auto a = records({{1, "add"}, {2, "mul"}, {1, "sub"}});
  const auto b = records({{7, "add"}, {8, "mul"}, {7, "sub"}});
  const RecordAlignment alignment = align_records(a, b);
  EXPECT_TRUE(alignment.identical);
  EXPECT_EQ(steps_of(alignment), (Steps{{0, 0}, {1, 1}, {2, 2}}));
}

TEST(CliRecordAlignment, AHelperThreadInterleavedDifferentlyStillPairs) {
  // The main thread's calls and a feeder thread's pickling calls, interleaved two ways.
  const auto a = records({{1, "stack"}, {2, "size"}, {2, "stride"}, {1, "getitem"}, {1, "stack"}});
  const auto b = records({{5, "stack"}, {5, "getitem"}, {6, "size"}, {5, "stack"}, {6, "stride"}});
  const RecordAlignment alignment = align_records(a, b);
  EXPECT_FALSE(alignment.identical);
  // Every call paired with its counterpart on the same thread, in BASE's order.
  EXPECT_EQ(steps_of(alignment), (Steps{{0, 0}, {1, 2}, {2, 4}, {3, 1}, {4, 3}}));
}

TEST(CliRecordAlignment, OneSidedCallsSitWhereTheyHappened) {
  const auto a = records({{1, "add"}, {1, "mul"}, {1, "tanh"}});
  const auto b = records({{1, "add"}, {1, "exp"}, {1, "mul"}, {1, "tanh"}, {1, "sum"}});
  EXPECT_EQ(steps_of(align_records(a, b)), (Steps{{0, 0}, {-1, 1}, {1, 2}, {2, 3}, {-1, 4}}));
  // A base-only call comes before a NEW-only call of the same gap, as align_sequences has it.
  const auto c = records({{1, "add"}, {1, "log"}, {1, "tanh"}});
  EXPECT_EQ(steps_of(align_records(c, b)),
            (Steps{{0, 0}, {1, -1}, {-1, 1}, {-1, 2}, {2, 3}, {-1, 4}}));
}

TEST(CliRecordAlignment, AThreadOnlyOneRunHasIsOneSided) {
  const auto a = records({{1, "add"}, {2, "mul"}, {1, "sum"}});
  const auto b = records({{4, "add"}, {4, "sum"}});
  EXPECT_EQ(steps_of(align_records(a, b)), (Steps{{0, 0}, {1, -1}, {2, 1}}));
  EXPECT_EQ(steps_of(align_records(b, a)), (Steps{{0, 0}, {1, 2}, {-1, 1}}));
}

TEST(CliRecordAlignment, EachLevelIsAlignedOnItsOwn) {
  // One op sequence over both levels would trade the torch call's pair for its two aten ops':
  // level by level, every call pairs.
  auto a = records({{1, "torch.f"}, {1, "aten.x"}, {1, "aten.y"}});
  auto b = records({{1, "aten.x"}, {1, "aten.y"}, {1, "torch.f"}});
  for (auto* run : {&a, &b}) {
    for (TraceRecord& r : *run) r.level = r.op.starts_with("aten.") ? "torch_dispatch" : "torch_function";
  }
  EXPECT_EQ(steps_of(align_records(a, b)), (Steps{{0, 2}, {1, 0}, {2, 1}}));
}

}  // namespace
}  // namespace ophook::cli
