#include "report/first_nonfinite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "ophook/model/op_kinds.hpp"

namespace ophook::cli {

using nlohmann::json;

namespace {

bool has_nonfinite(const ArraySpec& array) {
  return array.stats && (array.stats->nan > 0 || array.stats->inf > 0);
}


NonfiniteCall scanned_hit(std::size_t index, const TraceRecord& record) {
  NonfiniteCall hit;
  hit.process = index;
  hit.record = &record;
  for (const ArraySpec& array : record.arrays) {
    if (array.is_output() && has_nonfinite(array)) {
      hit.value_path = array.path;
      hit.nan = array.stats->nan;
      hit.inf = array.stats->inf;
      break;
    }
  }
  return hit;
}

std::string text_of(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string("-");
}

std::int64_t integer_of(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

/// summary.json's `key` on `process`, when it is an object.
const json* summary_object(const ProcessRun& process, const char* key) {
  if (!process.summary) return nullptr;
  const auto it = process.summary->find(key);
  return it != process.summary->end() && it->is_object() ? &*it : nullptr;
}

/// Whether summary.json answered `key` (null included: the recorder found none).
bool summary_answers(const ProcessRun& process, const char* key) {
  return process.summary && process.summary->contains(key);
}

/// Per group this process belongs to (has a collective in), the number of its last collective
/// issued before seq `before`: 0 when none was.
std::map<std::string, std::int64_t> collectives_before(const ProcessRun& process, std::int64_t before) {
  std::map<std::string, std::int64_t> last;
  for (const TraceRecord& r : process.records) {
    if (!r.collective) continue;
    auto& count = last[r.collective->group];
    if (r.seq < before) count = std::max(count, r.collective->group_seq);
  }
  return last;
}

std::optional<RankNonfinite> born_on(const ProcessRun& process, std::size_t index) {
  auto hit = find_first_nonfinite(process, index);
  if (!hit) return std::nullopt;
  RankNonfinite rank;
  rank.process = index;
  if (hit->record != nullptr) {
    rank.seq = hit->record->seq, rank.step = hit->record->step, rank.t_ns = hit->record->t_ns, rank.op = hit->record->op;
    rank.source = hit->record->source.value_or("-");
    if (hit->record->collective && hit->record->collective->received_nonfinite) return std::nullopt;
  } else {
    rank.seq = integer_of(hit->from_summary, "seq"), rank.step = integer_of(hit->from_summary, "step");
    rank.op = text_of(hit->from_summary, "op"), rank.source = text_of(hit->from_summary, "source");
  }
  rank.after_collective = collectives_before(process, rank.seq);
  return rank;
}

std::optional<RankNonfinite> received_by(const ProcessRun& process, std::size_t index) {
  RankNonfinite rank;
  rank.process = index, rank.received = true;
  if (const json* first = summary_object(process, "first_received_nonfinite")) {
    rank.seq = integer_of(*first, "seq"), rank.step = integer_of(*first, "step");
    rank.op = text_of(*first, "op"), rank.source = text_of(*first, "source");
    rank.group = text_of(*first, "group"), rank.group_seq = integer_of(*first, "group_seq");
    return rank;
  }
  if (summary_answers(process, "first_received_nonfinite")) return std::nullopt;
  const TraceRecord* first = nullptr;  // no summary.json: the records say
  for (const TraceRecord& r : process.records) {
    if (r.collective && r.collective->received_nonfinite && (first == nullptr || r.seq < first->seq)) first = &r;
  }
  if (first == nullptr) return std::nullopt;
  rank.seq = first->seq, rank.step = first->step, rank.op = first->op, rank.source = first->source.value_or("-");
  rank.group = first->collective->group, rank.group_seq = first->collective->group_seq;
  return rank;
}

}  // namespace

std::optional<NonfiniteCall> find_first_nonfinite(const ProcessRun& process, std::size_t index) {
  if (process.summary) {
    auto it = process.summary->find("first_nonfinite");
    // null is the recorder's answer (it knew which NaNs were the program's own: scalar -inf
    // arguments, np.errstate): only a run without it (killed before its summary) is scanned.
    if (it != process.summary->end() && it->is_null()) return std::nullopt;
    if (it != process.summary->end() && it->is_object()) {
      NonfiniteCall hit;
      hit.process = index;
      hit.from_summary = *it;
      if (auto seq = it->find("seq"); seq != it->end() && seq->is_number_integer()) {
        for (const TraceRecord& r : process.records) {
          if (r.seq == seq->get<std::int64_t>()) {
            hit = scanned_hit(index, r);
            hit.from_summary = *it;
            break;
          }
        }
      }
      return hit;
    }
  }
  const TraceRecord* any = nullptr;
  for (const TraceRecord& r : process.records) {
    if (core::returns_uninitialized_memory(r.op)) continue;  // whatever the allocator left there
    bool bad_out = false, bad_in = false;
    for (const ArraySpec& array : r.arrays) {
      (array.is_output() ? bad_out : bad_in) |= has_nonfinite(array);
    }
    if (bad_out && !bad_in) return scanned_hit(index, r);
    if (bad_out && any == nullptr) any = &r;
  }
  if (any != nullptr) return scanned_hit(index, *any);
  return std::nullopt;
}

std::vector<RankNonfinite> first_nonfinite_per_rank(const RunReport& report) {
  std::vector<RankNonfinite> ranks;
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    if (auto born = born_on(report.processes[i], i)) {
      ranks.push_back(std::move(*born));
    } else if (auto received = received_by(report.processes[i], i)) {
      ranks.push_back(std::move(*received));
    }
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
