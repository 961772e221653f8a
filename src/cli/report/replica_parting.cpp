#include "report/replica_parting.hpp"

#include <algorithm>
#include <string_view>

#include "compare/run_comparison.hpp"

namespace ophook::cli {

namespace {

/// The records of steps from .. to, in their order.
std::vector<TraceRecord> records_of_steps(const std::vector<TraceRecord>& records, std::int64_t from,
                                          std::int64_t to) {
  std::vector<TraceRecord> kept;
  for (const TraceRecord& r : records) {
    if (r.step >= from && r.step <= to) kept.push_back(r);
  }
  std::sort(kept.begin(), kept.end(),
            [](const TraceRecord& a, const TraceRecord& b) { return a.seq < b.seq; });
  return kept;
}

/// A collective whose outputs every member of its group holds alike.
bool replicated_outputs(const TraceRecord& record) {
  if (!record.collective) return false;
  const std::string_view op = record.op;
  return op.find("allreduce") != std::string_view::npos ||
         op.find("all_reduce") != std::string_view::npos ||
         op.find("broadcast") != std::string_view::npos ||
         op.find("allgather") != std::string_view::npos ||
         op.find("all_gather") != std::string_view::npos;
}

bool is_input(const ValueResult& value) {
  const std::string& path = value.path();
  return path.starts_with("args") || path.starts_with("kwargs");
}

bool compared_by_value(const ValueResult& value) {
  return value.method == ValueMethod::Data || value.method == ValueMethod::Stats;
}

/// Inputs agree: every array input matched (InputState::Match) and at least one was compared by
/// value, so a call that makes its outputs from nothing (a random draw) does not count.
bool inputs_agree(const PairResult& pair) {
  return pair.inputs == InputState::Match &&
         std::any_of(pair.values.begin(), pair.values.end(), [](const ValueResult& v) {
           return is_input(v) && (v.base_array != nullptr) && compared_by_value(v);
         });
}

bool has_array_output(const TraceRecord& record) {
  return std::any_of(record.arrays.begin(), record.arrays.end(),
                     [](const ArraySpec& a) { return a.is_output(); });
}

bool outputs_differ(const PairResult& pair) {
  return std::any_of(pair.values.begin(), pair.values.end(),
                     [](const ValueResult& v) { return !is_input(v) && v.differs(); });
}

}  // namespace

std::optional<std::int64_t> parted_rank(const ProcessIndex::ReplicasParted& parted) {
  if (parted.ranks.empty()) return std::nullopt;
  return parted.ranks.front();
}

std::optional<std::int64_t> agreeing_rank(const ProcessIndex::ReplicasParted& parted) {
  if (!parted.agreeing.empty()) return parted.agreeing.front();
  if (parted.ranks.size() > 1) return parted.ranks[1];  // no value most hold: the next one
  return std::nullopt;
}

void find_where_replicas_part(ReplicaParting& parting, const std::vector<TraceRecord>& parted,
                              const std::filesystem::path& parted_dir,
                              const std::vector<TraceRecord>& agreeing,
                              const std::filesystem::path& agreeing_dir) {
  const std::int64_t to = parting.parted.step;
  parting.from_step = std::max<std::int64_t>(0, to - std::max<std::int64_t>(1, parting.parted.every) + 1);
  ProcessComparison process;
  process.base_name = process.new_name = "replica";
  process.base_dir = parted_dir;
  process.new_dir = agreeing_dir;
  process.base = records_of_steps(parted, parting.from_step, to);
  process.other = records_of_steps(agreeing, parting.from_step, to);
  // Replicas hold the same bits: no tolerance.
  compare_loaded(process, Tolerance{0, 0}, 1);
  parting.compared = true;
  parting.values = process.counts.values_compared;
  // With no value held by most, neither rank is the odd one: a call of either counts.
  const bool either = parting.parted.agreeing.empty();
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    if (!step.paired()) {
      const bool by_parted = step.base >= 0;
      const TraceRecord& record = by_parted ? process.base[step.base] : process.other[step.other];
      if (!parting.only_one && (by_parted || either) && has_array_output(record)) {
        parting.only_one = record;
        parting.only_one_by_parted = by_parted;
      }
      continue;
    }
    if (parting.first_apart) continue;
    const PairResult* pair = process.pair_at_step(s);
    if (pair == nullptr || !pair->differs) continue;
    const TraceRecord& record = process.base[pair->base];
    const bool collective = replicated_outputs(record) && outputs_differ(*pair);
    if (!collective && !(inputs_agree(*pair) && outputs_differ(*pair))) continue;
    parting.first_apart = record;
    parting.collective = collective;
    parting.reasons = pair_reasons(*pair, 2);
  }
}

}  // namespace ophook::cli
