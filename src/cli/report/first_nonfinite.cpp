#include "report/first_nonfinite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>


namespace ophook::cli {

using nlohmann::json;

namespace {

NonfiniteCall scanned_hit(std::size_t index, const TraceRecord& record) {
  NonfiniteCall hit;
  hit.process = index;
  hit.record = &record;
  for (const ArraySpec& array : record.arrays) {
    if (array.is_output() && array.has_nonfinite()) {
      hit.value_path = array.path;
      hit.nan = array.stats->nan;
      hit.inf = array.stats->inf;
      break;
    }
  }
  return hit;
}

}  // namespace

std::optional<NonfiniteCall> culprit_call(const ProcessRun& process, std::size_t index) {
  const auto& first = process.index.first_nonfinite;
  if (!first || first->received) return std::nullopt;
  for (const TraceRecord& r : process.records) {
    if (r.seq != first->seq) continue;
    NonfiniteCall hit = scanned_hit(index, r);
    hit.from_summary = process.index.culprit;
    return hit;
  }
  NonfiniteCall hit;
  hit.process = index;
  hit.from_summary = process.index.culprit.is_object()
                         ? process.index.culprit
                         : json{{"seq", first->seq}, {"op", first->op}, {"source", first->source}};
  return hit;
}

std::vector<RankNonfinite> first_nonfinite_per_rank(const std::vector<ProcessRun>& processes) {
  std::vector<RankNonfinite> ranks;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (!processes[i].index.first_nonfinite) continue;
    ranks.push_back(*processes[i].index.first_nonfinite);
    ranks.back().process = i;
  }
  return ranks;
}

bool causally_before(const RankNonfinite& a, const RankNonfinite& b) {
  if (a.received || b.received) return false;
  for (const auto& [group, count] : a.after_collective) {
    const auto other = b.after_collective.find(group);
    if (other != b.after_collective.end() && count < other->second) return true;
  }
  return false;
}

std::optional<std::size_t> causal_first(const std::vector<RankNonfinite>& ranks) {
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].received) continue;
    if (!first) {
      first = i;
      continue;
    }
    const auto& a = ranks[i];
    const auto& b = ranks[*first];
    const bool earlier = causally_before(a, b) || (!causally_before(b, a) && std::tie(a.step, a.t_ns, a.process) <
                                                                                 std::tie(b.step, b.t_ns, b.process));
    if (earlier) first = i;
  }
  return first;
}

}  // namespace ophook::cli
