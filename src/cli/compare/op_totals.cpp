#include "compare/op_totals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
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

/// `from`'s calls added to `into`'s (rows of the same op).
void merge_row(ComparedOp& into, const ComparedOp& from) {
  into.pairs += from.pairs;
  into.differing += from.differing;
  into.origins += from.origins;
  if (from.has_errors) {
    into.max_abs = into.has_errors ? std::max(into.max_abs, from.max_abs) : from.max_abs;
  }
  if (from.has_rel) {
    into.max_rel = into.has_rel ? std::max(into.max_rel, from.max_rel) : from.max_rel;
  }
  if (from.has_cosine) {
    into.min_cosine =
        into.has_cosine ? std::min(into.min_cosine, from.min_cosine) : from.min_cosine;
  }
  into.has_errors = into.has_errors || from.has_errors;
  into.has_rel = into.has_rel || from.has_rel;
  into.has_cosine = into.has_cosine || from.has_cosine;
  into.stats_only = into.stats_only || from.stats_only;
  into.shape_mismatches += from.shape_mismatches;
  into.dtype_mismatches += from.dtype_mismatches;
  into.nonfinite_mismatches += from.nonfinite_mismatches;
  into.missing_values += from.missing_values;
  into.error_mismatches += from.error_mismatches;
  into.not_close_values += from.not_close_values;
  into.uninitialized_values += from.uninitialized_values;
  into.unmatched_base += from.unmatched_base;
  into.unmatched_new += from.unmatched_new;
}

/// One process's op rows in the order its steps first name them; first_seen is that step.
std::vector<ComparedOp> process_rows(const ProcessComparison& process) {
  std::vector<ComparedOp> rows;
  std::unordered_map<std::string_view, std::size_t> row_of_op;
  auto row = [&](const std::string& op, std::size_t step) -> ComparedOp& {
    auto [it, inserted] = row_of_op.emplace(op, rows.size());
    if (inserted) {
      rows.emplace_back();
      rows.back().op = op;
      rows.back().first_seen = step;
    }
    return rows[it->second];
  };
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    if (const PairResult* pair = process.pair_at_step(s)) {
      add_pair(row(process.base[pair->base].op, s), *pair);
    } else if (step.base >= 0) {
      ++row(process.base[step.base].op, s).unmatched_base;
    } else {
      ++row(process.other[step.other].op, s).unmatched_new;
    }
  }
  return rows;
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

ProcessComparison::FirstCall first_call(const ProcessComparison& process, std::size_t step) {
  const AlignStep& s = process.steps[step];
  ProcessComparison::FirstCall call;
  call.step = step;
  if (s.base >= 0) call.base_seq = process.base[s.base].seq;
  if (s.other >= 0) call.new_seq = process.other[s.other].seq;
  call.clock = base_clock(process, step);
  return call;
}

std::optional<CallRef> earliest(
    const CompareResult& result,
    std::optional<ProcessComparison::FirstCall> ProcessComparison::*first) {
  std::optional<CallRef> best;
  std::int64_t best_time = 0;
  for (std::size_t p = 0; p < result.processes.size(); ++p) {
    const auto& call = result.processes[p].*first;
    if (!call) continue;
    if (!best || call->clock < best_time) {
      best = CallRef{p, call->step};
      best_time = call->clock;
    }
  }
  return best;
}

}  // namespace

void total_process(ProcessComparison& process) {
  CompareCounts& counts = process.counts;
  counts = CompareCounts{};
  process.first_divergence.reset();
  process.first_origin.reset();
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
        if (!process.first_origin) process.first_origin = first_call(process, s);
      }
    } else if (step.base >= 0) {
      ++counts.unmatched_base;
    } else {
      ++counts.unmatched_new;
    }
    if (divergent && !process.first_divergence) process.first_divergence = first_call(process, s);
  }
}

void ComparedOpTable::add(std::size_t index, const ProcessComparison& process) {
  std::vector<ComparedOp> rows = process_rows(process);
  std::lock_guard lock(mutex_);
  for (ComparedOp& row : rows) {
    const std::pair<std::size_t, std::size_t> seen{index, row.first_seen};
    auto [it, inserted] = row_of_op_.emplace(row.op, rows_.size());
    if (inserted) {
      rows_.push_back(std::move(row));
      first_seen_.push_back(seen);
      continue;
    }
    merge_row(rows_[it->second], row);
    first_seen_[it->second] = std::min(first_seen_[it->second], seen);
  }
}

std::vector<ComparedOp> ComparedOpTable::take() {
  std::lock_guard lock(mutex_);
  std::vector<std::size_t> order(rows_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t x, std::size_t y) { return first_seen_[x] < first_seen_[y]; });
  std::vector<ComparedOp> rows;
  rows.reserve(rows_.size());
  for (std::size_t i : order) {
    rows.push_back(std::move(rows_[i]));
    rows.back().first_seen = rows.size() - 1;
  }
  rows_.clear();
  first_seen_.clear();
  row_of_op_.clear();
  std::stable_sort(rows.begin(), rows.end(), [](const ComparedOp& x, const ComparedOp& y) {
    const bool dx = x.differing + x.unmatched_base + x.unmatched_new > 0;
    const bool dy = y.differing + y.unmatched_base + y.unmatched_new > 0;
    if (dx != dy) return dx;
    return x.first_seen < y.first_seen;
  });
  return rows;
}

void total_runs(CompareResult& result, ComparedOpTable& ops) {
  result.counts = CompareCounts{};
  result.base_calls = result.new_calls = result.unmatched_processes = 0;
  for (const ProcessComparison& process : result.processes) {
    result.counts += process.counts;
    result.base_calls += process.base_calls();
    result.new_calls += process.new_calls();
    if (!process.matched()) ++result.unmatched_processes;
  }
  result.ops = ops.take();
  result.first_divergence = earliest(result, &ProcessComparison::first_divergence);
  result.first_origin = earliest(result, &ProcessComparison::first_origin);
}

}  // namespace ophook::cli
