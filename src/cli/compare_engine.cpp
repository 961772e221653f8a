#include "compare_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "ophook/error.hpp"
#include "parallel_for.hpp"
#include "record_compare.hpp"
#include "trace_reader.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kNoPair = static_cast<std::size_t>(-1);

void check_run_dir(const fs::path& dir, const char* role) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    throw Error(fmt::format("{} directory {}: not found", role, dir.string()));
  }
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("{} directory {}: not a directory", role, dir.string()));
  }
}

/// Op names as small integers, shared by both runs, for the alignment.
std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>> intern_ops(
    const std::vector<TraceRecord>& base, const std::vector<TraceRecord>& other) {
  std::unordered_map<std::string_view, std::uint32_t> ids;
  auto symbols = [&](const std::vector<TraceRecord>& records) {
    std::vector<std::uint32_t> out;
    out.reserve(records.size());
    for (const TraceRecord& r : records) {
      out.push_back(ids.emplace(r.op, static_cast<std::uint32_t>(ids.size())).first->second);
    }
    return out;
  };
  auto a = symbols(base);
  auto b = symbols(other);
  return {std::move(a), std::move(b)};
}

void align(CompareResult& result) {
  auto [a, b] = intern_ops(result.base, result.other);
  result.identical_sequences = a == b;
  if (result.identical_sequences) {
    result.steps.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      result.steps.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)});
    }
  } else {
    result.steps = align_sequences(a, b);
  }
  result.pair_index_of_step.assign(result.steps.size(), kNoPair);
  for (std::size_t s = 0; s < result.steps.size(); ++s) {
    const AlignStep& step = result.steps[s];
    if (!step.paired()) continue;
    result.pair_index_of_step[s] = result.pairs.size();
    PairResult pair;
    pair.base = static_cast<std::size_t>(step.base);
    pair.other = static_cast<std::size_t>(step.other);
    result.pairs.push_back(std::move(pair));
  }
}

/// Small pairs go through all threads one pair each; large ones then run one at a time with
/// all threads inside the array kernel.
void compare_pairs(CompareResult& result, const CompareOptions& options) {
  const PairContext context{options.base_dir, options.new_dir, options.tolerance,
                            UninitializedMemory(result.base), UninitializedMemory(result.other)};
  std::vector<std::size_t> small, large;
  for (std::size_t i = 0; i < result.pairs.size(); ++i) {
    const PairResult& p = result.pairs[i];
    (is_large_pair(result.base[p.base], result.other[p.other]) ? large : small).push_back(i);
  }
  auto run = [&](std::size_t index, unsigned threads) {
    PairResult& p = result.pairs[index];
    PairResult done = compare_records(result.base[p.base], result.other[p.other], context, threads);
    done.base = p.base;
    done.other = p.other;
    p = std::move(done);
  };
  parallel_for(small.size(), options.threads, [&](std::size_t k) { run(small[k], 1); });
  for (std::size_t index : large) run(index, options.threads);
}

OpSummary& summary_for(const std::string& op, std::size_t step, CompareResult& result,
                       std::unordered_map<std::string, std::size_t>& index) {
  auto [it, inserted] = index.emplace(op, result.ops.size());
  if (inserted) {
    result.ops.emplace_back();
    result.ops.back().op = op;
    result.ops.back().first_step = static_cast<std::int64_t>(step);
  }
  return result.ops[it->second];
}

void add_pair(OpSummary& s, const PairResult& pair) {
  ++s.pairs;
  if (pair.differs) ++s.differing;
  if (!pair.error_note.empty()) ++s.error_mismatches;
  for (const ValueResult& v : pair.values) {
    const ArrayDiff& d = v.diff;
    if (v.method == ValueMethod::Missing) ++s.missing_values;
    if (v.method == ValueMethod::Uninitialized) ++s.uninitialized_values;
    if (d.shape_mismatch) ++s.shape_mismatches;
    if (d.dtype_mismatch) ++s.dtype_mismatches;
    if (d.nonfinite_mismatch > 0) ++s.nonfinite_mismatches;
    if (d.not_close > d.nonfinite_mismatch) ++s.not_close_values;
    if (!d.compared) continue;
    if (!std::isnan(d.max_abs)) {
      s.max_abs = s.has_errors ? std::max(s.max_abs, d.max_abs) : d.max_abs;
      s.has_errors = true;
    }
    if (std::isnan(d.max_rel)) {
      s.stats_only = true;  // no relative error or cosine from statistics
    } else {
      s.max_rel = s.has_rel ? std::max(s.max_rel, d.max_rel) : d.max_rel;
      s.has_rel = true;
    }
    if (!std::isnan(d.cosine)) {
      s.min_cosine = s.has_cosine ? std::min(s.min_cosine, d.cosine) : d.cosine;
      s.has_cosine = true;
    }
  }
}

void summarise(CompareResult& result) {
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t s = 0; s < result.steps.size(); ++s) {
    const AlignStep& step = result.steps[s];
    bool divergent = true;
    if (const PairResult* pair = result.pair_at_step(s)) {
      add_pair(summary_for(result.base[pair->base].op, s, result, index), *pair);
      divergent = pair->differs;
      if (pair->differs) ++result.differing_pairs;
    } else if (step.base >= 0) {
      ++summary_for(result.base[step.base].op, s, result, index).unmatched_base;
      ++result.unmatched_base;
    } else {
      ++summary_for(result.other[step.other].op, s, result, index).unmatched_new;
      ++result.unmatched_new;
    }
    if (divergent && !result.first_divergent_step) result.first_divergent_step = s;
  }
  for (const OpSummary& op : result.ops) result.uninitialized_values += op.uninitialized_values;
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const OpSummary& x, const OpSummary& y) {
                     const bool dx = x.differing + x.unmatched_base + x.unmatched_new > 0;
                     const bool dy = y.differing + y.unmatched_base + y.unmatched_new > 0;
                     if (dx != dy) return dx;
                     return x.first_step < y.first_step;
                   });
}

}  // namespace

CompareResult run_comparison(const CompareOptions& options) {
  check_run_dir(options.base_dir, "BASE");
  check_run_dir(options.new_dir, "NEW");
  CompareResult result;
  result.base_dir = options.base_dir;
  result.new_dir = options.new_dir;
  result.tolerance = options.tolerance;
  result.base =
      read_trace(options.base_dir / "trace.jsonl", result.warnings, options.threads).records;
  result.other =
      read_trace(options.new_dir / "trace.jsonl", result.warnings, options.threads).records;
  align(result);
  compare_pairs(result, options);
  summarise(result);
  return result;
}

}  // namespace ophook::cli
