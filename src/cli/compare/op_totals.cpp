#include "compare/op_totals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace ophook::cli {

namespace {

void add_pair(ComparedOp& s, const PairResult& pair) {
  ++s.pairs;
  if (pair.differs) ++s.differing;
  if (pair.origin()) ++s.origins;
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

/// The per-op rows, created in order of first appearance.
class OpTable {
 public:
  explicit OpTable(std::vector<ComparedOp>& ops) : ops_(ops) {}

  ComparedOp& row(const std::string& op) {
    auto [it, inserted] = index_.emplace(op, ops_.size());
    if (inserted) {
      ops_.emplace_back();
      ops_.back().op = op;
      ops_.back().first_seen = ops_.size() - 1;
    }
    return ops_[it->second];
  }

 private:
  std::vector<ComparedOp>& ops_;
  std::unordered_map<std::string, std::size_t> index_;
};

void add_process(const ProcessComparison& process, OpTable& table) {
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    if (const PairResult* pair = process.pair_at_step(s)) {
      add_pair(table.row(process.base[pair->base].op), *pair);
    } else if (step.base >= 0) {
      ++table.row(process.base[step.base].op).unmatched_base;
    } else {
      ++table.row(process.other[step.other].op).unmatched_new;
    }
  }
}

/// When `step` happened on BASE's clock: its BASE record's t_ns, else the last one before it.
/// A process only NEW has falls back to NEW's clock.
std::int64_t base_clock(const ProcessComparison& process, std::size_t step) {
  for (std::size_t s = step + 1; s-- > 0;) {
    if (process.steps[s].base >= 0) return process.base[process.steps[s].base].t_ns;
  }
  if (process.base.empty() && process.steps[step].other >= 0) {
    return process.other[process.steps[step].other].t_ns;
  }
  return std::numeric_limits<std::int64_t>::min();
}

std::optional<CallRef> earliest(const CompareResult& result,
                                std::optional<std::size_t> ProcessComparison::*first) {
  std::optional<CallRef> best;
  std::int64_t best_time = 0;
  for (std::size_t p = 0; p < result.processes.size(); ++p) {
    const ProcessComparison& process = result.processes[p];
    if (!(process.*first)) continue;
    const std::int64_t time = base_clock(process, *(process.*first));
    if (!best || time < best_time) {
      best = CallRef{p, *(process.*first)};
      best_time = time;
    }
  }
  return best;
}

}  // namespace

void total_process(ProcessComparison& process) {
  CompareCounts& counts = process.counts;
  counts = CompareCounts{};
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    bool divergent = true;
    if (const PairResult* pair = process.pair_at_step(s)) {
      ++counts.pairs;
      if (pair->has_values) ++counts.values_compared;
      for (const ValueResult& value : pair->values) {
        if (value.method == ValueMethod::Uninitialized) ++counts.uninitialized_values;
      }
      divergent = pair->differs;
      if (pair->differs) ++counts.differing_pairs;
      if (pair->origin()) {
        ++counts.origins;
        if (!process.first_origin_step) process.first_origin_step = s;
      }
    } else if (step.base >= 0) {
      ++counts.unmatched_base;
    } else {
      ++counts.unmatched_new;
    }
    if (divergent && !process.first_divergent_step) process.first_divergent_step = s;
  }
}

void total_runs(CompareResult& result) {
  result.counts = CompareCounts{};
  result.base_calls = result.new_calls = result.unmatched_processes = 0;
  result.ops.clear();
  OpTable table(result.ops);
  for (const ProcessComparison& process : result.processes) {
    result.counts += process.counts;
    result.base_calls += process.base_calls();
    result.new_calls += process.new_calls();
    if (!process.matched()) ++result.unmatched_processes;
    add_process(process, table);
  }
  result.first_divergence = earliest(result, &ProcessComparison::first_divergent_step);
  result.first_origin = earliest(result, &ProcessComparison::first_origin_step);
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const ComparedOp& x, const ComparedOp& y) {
                     const bool dx = x.differing + x.unmatched_base + x.unmatched_new > 0;
                     const bool dy = y.differing + y.unmatched_base + y.unmatched_new > 0;
                     if (dx != dy) return dx;
                     return x.first_seen < y.first_seen;
                   });
}

}  // namespace ophook::cli
