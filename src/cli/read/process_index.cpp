#include "read/process_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "ophook/config/settings.hpp"
#include "ophook/error.hpp"
#include "ophook/model/op_kinds.hpp"
#include "read/summary_file.hpp"
#include "read/trace_reader.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string text_of(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string("-");
}

std::int64_t integer_of(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_number_integer() ? value->get<std::int64_t>() : 0;
}

std::optional<std::uint64_t> count_of(const json& object, const char* key) {
  const json* value = member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, value->get<std::int64_t>()));
}

/// Per group, the number of the last collective issued before seq `before` (0 when none was).
std::map<std::string, std::int64_t> collectives_before(const std::vector<TraceRecord>& records, std::int64_t before) {
  std::map<std::string, std::int64_t> last;
  for (const TraceRecord& r : records) {
    if (!r.collective) continue;
    auto& count = last[r.collective->group];
    if (r.seq < before) count = std::max(count, r.collective->group_seq);
  }
  return last;
}

RankNonfinite born_from_record(const TraceRecord& r, const std::vector<TraceRecord>& records) {
  RankNonfinite rank;
  rank.seq = r.seq, rank.step = r.step, rank.t_ns = r.t_ns, rank.op = r.op, rank.source = r.source.value_or("-");
  rank.after_collective = collectives_before(records, r.seq);
  return rank;
}

/// The records' own answer: the first call whose outputs hold NaN/Inf while its inputs do not,
/// else the first whose outputs hold any; a collective that received it makes it received.
std::optional<RankNonfinite> first_nonfinite_in(const std::vector<TraceRecord>& records) {
  const TraceRecord* any = nullptr;
  const TraceRecord* born = nullptr;
  for (const TraceRecord& r : records) {
    if (core::returns_uninitialized_memory(r.op)) continue;  // whatever the allocator left there
    bool bad_out = false, bad_in = false;
    for (const ArraySpec& array : r.arrays) (array.is_output() ? bad_out : bad_in) |= array.has_nonfinite();
    if (bad_out && !bad_in) {
      born = &r;
      break;
    }
    if (bad_out && any == nullptr) any = &r;
  }
  if (born == nullptr) born = any;
  if (born != nullptr && !(born->collective && born->collective->received_nonfinite)) {
    return born_from_record(*born, records);
  }
  const TraceRecord* first = nullptr;
  for (const TraceRecord& r : records) {
    if (r.collective && r.collective->received_nonfinite && (first == nullptr || r.seq < first->seq)) first = &r;
  }
  if (first == nullptr) return std::nullopt;
  RankNonfinite rank;
  rank.received = true;
  rank.seq = first->seq, rank.step = first->step, rank.t_ns = first->t_ns, rank.op = first->op;
  rank.source = first->source.value_or("-");
  rank.group = first->collective->group, rank.group_seq = first->collective->group_seq;
  return rank;
}

RankNonfinite born_from_summary(const json& culprit) {
  RankNonfinite rank;
  rank.seq = integer_of(culprit, "seq"), rank.step = integer_of(culprit, "step");
  if (const json* t = member(culprit, "t_ns"); t != nullptr && t->is_number_integer()) rank.t_ns = t->get<std::int64_t>();
  rank.op = text_of(culprit, "op"), rank.source = text_of(culprit, "source");
  if (const json* after = member(culprit, "after_collective"); after != nullptr && after->is_object()) {
    for (const auto& [group, count] : after->items()) {
      if (count.is_number_integer()) rank.after_collective[group] = count.get<std::int64_t>();
    }
  }
  return rank;
}

RankNonfinite received_from_summary(const json& first) {
  RankNonfinite rank;
  rank.received = true;
  rank.seq = integer_of(first, "seq"), rank.step = integer_of(first, "step");
  rank.op = text_of(first, "op"), rank.source = text_of(first, "source");
  rank.group = text_of(first, "group"), rank.group_seq = integer_of(first, "group_seq");
  return rank;
}

/// Whether summary.json carries the whole index for the trace.jsonl of `trace_bytes` bytes (any,
/// when the directory holds no trace.jsonl: its index was copied alone).
bool summary_indexes(const json& summary, std::optional<std::uintmax_t> trace_bytes) {
  const json* trace = member(summary, "trace");
  const json* collectives = member(summary, "collectives");
  const json* recorded = member(summary, "recorded");
  if (trace == nullptr || collectives == nullptr || recorded == nullptr) return false;
  if (!trace->is_object() || !collectives->is_object() || !recorded->is_object()) return false;
  if (trace_bytes && count_of(*trace, "bytes") != std::optional<std::uint64_t>(*trace_bytes)) return false;
  const json* culprit = member(summary, "first_nonfinite");
  // A culprit whose place among the collectives the recorder could not keep: the records say.
  return culprit == nullptr || !culprit->is_object() || member(*culprit, "after_collective") == nullptr ||
         member(*culprit, "after_collective")->is_object();
}

void counts_from(const json& object, std::map<std::string, std::uint64_t>& counts) {
  if (!object.is_object()) return;
  for (const auto& [name, value] : object.items()) {
    if (value.is_number_integer() && value.get<std::int64_t>() > 0) counts[name] += value.get<std::uint64_t>();
  }
}

void index_from_summary(const json& summary, ProcessIndex& index) {
  index.from_summary = true;
  CallCounts& counts = index.counts;
  if (const json* ops = member(summary, "ops"); ops != nullptr && ops->is_object()) {
    for (const auto& [name, totals] : ops->items()) {
      OpTotals& t = counts.op(name);
      t.calls += count_of(totals, "count").value_or(0);
      t.total_ns += static_cast<double>(integer_of(totals, "total_ns"));
      t.max_ns = std::max(t.max_ns, static_cast<double>(integer_of(totals, "max_ns")));
      counts.calls += count_of(totals, "count").value_or(0);
      counts.total_ns += static_cast<double>(integer_of(totals, "total_ns"));
    }
  }
  const json& recorded = summary["recorded"];
  counts_from(recorded.value("levels", json()), counts.levels);
  counts_from(recorded.value("phases", json()), counts.phases);
  counts_from(recorded.value("modules", json()), counts.modules);
  if (const json* steps = member(recorded, "steps"); steps != nullptr && steps->is_string()) {
    if (auto ranges = core::parse_ranges(steps->get<std::string>())) {
      for (const auto& [first, last] : ranges->ranges) {
        counts.steps.emplace_back(static_cast<std::int64_t>(first), static_cast<std::int64_t>(last));
      }
    }
    counts.join_steps();
  }
  for (const auto& [group, facts] : summary["collectives"].items()) {
    ProcessIndex::Group& g = index.collectives[group];
    g.calls = count_of(facts, "calls").value_or(0);
    g.last_group_seq = integer_of(facts, "last_group_seq");
    if (const json* ranks = member(facts, "ranks"); ranks != nullptr && ranks->is_array()) {
      for (const json& rank : *ranks) {
        if (rank.is_number_integer()) g.ranks.push_back(rank.get<std::int64_t>());
      }
    }
  }
}

/// notes.replicas' parting, or nullopt when the replicas did not part.
std::optional<ProcessIndex::ReplicasParted> replicas_parted(const json& replicas) {
  const json* parted = member(replicas, "parted");
  if (parted == nullptr || !parted->is_object()) return std::nullopt;
  ProcessIndex::ReplicasParted out;
  out.step = integer_of(*parted, "step");
  if (const json* every = member(replicas, "every"); every != nullptr && every->is_number_integer()) {
    out.every = every->get<std::int64_t>();
  }
  out.parameter = text_of(*parted, "parameter");
  if (const json* group = member(*parted, "group"); group != nullptr) {
    out.group = group->is_string() ? group->get<std::string>() : group->dump();
  }
  for (auto [key, kept, count] : {std::tuple{"ranks", &out.ranks, &out.ranks_count},
                                  std::tuple{"agreeing", &out.agreeing, &out.agreeing_count}}) {
    const json* list = member(*parted, key);
    if (list == nullptr || !list->is_array()) continue;
    *count = list->size();
    for (const json& rank : *list) {
      if (kept->size() < kPartedRanksKept && rank.is_number_integer()) kept->push_back(rank.get<std::int64_t>());
    }
  }
  return out;
}

/// What only summary.json knows, and its answer on the first NaN/Inf where it has one: null is
/// the recorder's (it knew which NaNs were the program's own: np.errstate, scalar -inf arguments).
void summary_facts(const json& summary, const std::vector<TraceRecord>* records, ProcessIndex& index) {
  index.budget = summary.value("budget", json());
  index.write_errors = summary.value("write_errors", json());
  if (const json* totals = member(summary, "totals"); totals != nullptr && totals->is_object()) {
    index.files = count_of(*totals, "files");
    index.bytes_written = count_of(*totals, "bytes_written");
  }
  if (const json* pid = member(summary, "pid"); pid != nullptr && pid->is_number_integer()) index.pid = pid->get<std::int64_t>();
  if (const json* notes = member(summary, "notes"); notes != nullptr && notes->is_object()) {
    if (const json* replicas = member(*notes, "replicas"); replicas != nullptr && replicas->is_object()) {
      index.replicas_parted = replicas_parted(*replicas);
    }
  }
  const json* culprit = member(summary, "first_nonfinite");
  if (culprit == nullptr) return;  // an older recorder's summary: the records' answer stands
  if (culprit->is_object()) {
    index.culprit = *culprit;
    index.first_nonfinite = born_from_summary(*culprit);
    if (records != nullptr) index.first_nonfinite->after_collective = collectives_before(*records, index.first_nonfinite->seq);
    return;
  }
  index.first_nonfinite.reset();
  const json* received = member(summary, "first_received_nonfinite");
  if (received != nullptr && received->is_object()) {
    index.first_nonfinite = received_from_summary(*received);
  } else if (received == nullptr && records != nullptr) {
    if (auto scanned = first_nonfinite_in(*records); scanned && scanned->received) index.first_nonfinite = scanned;
  }
}

}  // namespace

OpTotals& CallCounts::op(const std::string& name) {
  auto [it, inserted] = op_index_.emplace(name, ops.size());
  if (inserted) ops.push_back({name});
  return ops[it->second];
}

void CallCounts::count(const std::string& name, double dur_ns, const std::string& level, const std::string& phase,
                       const std::string* module, std::int64_t step) {
  OpTotals& t = op(name);
  ++t.calls;
  t.total_ns += dur_ns;
  t.max_ns = std::max(t.max_ns, dur_ns);
  ++calls;
  total_ns += dur_ns;
  ++levels[level];
  ++phases[phase];
  if (module != nullptr) ++modules[*module];
  // Records come in seq order and steps mostly grow: most calls extend the last range.
  if (!steps.empty() && step >= steps.back().first && step <= steps.back().second + 1) {
    steps.back().second = std::max(steps.back().second, step);
  } else {
    steps.emplace_back(step, step);
  }
}

void CallCounts::join_steps() {
  std::sort(steps.begin(), steps.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> joined;
  for (const auto& range : steps) {
    if (!joined.empty() && range.first <= joined.back().second + 1) {
      joined.back().second = std::max(joined.back().second, range.second);
    } else {
      joined.push_back(range);
    }
  }
  steps = std::move(joined);
}

void CallCounts::add(const CallCounts& other) {
  for (const OpTotals& theirs : other.ops) {
    OpTotals& t = op(theirs.op);
    t.calls += theirs.calls;
    t.total_ns += theirs.total_ns;
    t.max_ns = std::max(t.max_ns, theirs.max_ns);
  }
  calls += other.calls;
  total_ns += other.total_ns;
  for (const auto& [name, n] : other.levels) levels[name] += n;
  for (const auto& [name, n] : other.phases) phases[name] += n;
  for (const auto& [name, n] : other.modules) modules[name] += n;
  steps.insert(steps.end(), other.steps.begin(), other.steps.end());
  join_steps();
}

ProcessIndex index_of_records(const std::vector<TraceRecord>& records) {
  ProcessIndex index;
  for (const TraceRecord& r : records) {
    index.counts.count(r.op, static_cast<double>(r.dur_ns), r.level, r.phase.value_or("none"),
                       r.module ? &*r.module : nullptr, r.step);
    if (r.collective) {
      ProcessIndex::Group& g = index.collectives[r.collective->group];
      ++g.calls;
      g.last_group_seq = std::max(g.last_group_seq, r.collective->group_seq);
    }
  }
  index.counts.join_steps();
  index.first_nonfinite = first_nonfinite_in(records);
  return index;
}

ProcessIndex read_process_index(const fs::path& dir, std::vector<std::string>& warnings) {
  SummaryFile summary = read_summary_file(dir);
  if (!summary.problem.empty()) throw Error(summary.problem);
  const fs::path trace = dir / "trace.jsonl";
  std::error_code ec;
  const std::uintmax_t trace_bytes = fs::file_size(trace, ec);
  const bool has_trace = !ec;
  if (summary.present() && summary_indexes(*summary.document, has_trace ? std::optional(trace_bytes) : std::nullopt)) {
    ProcessIndex index;
    index_from_summary(*summary.document, index);
    summary_facts(*summary.document, nullptr, index);
    return index;
  }
  if (!has_trace) return {};  // nothing to count: from_summary false says so
  const std::vector<TraceRecord> records = read_trace(trace, warnings).records;
  ProcessIndex index = index_of_records(records);
  if (!summary.present()) {
    index.partial = "no summary.json (the process ended before writing it)";
    return index;
  }
  const json* said_trace = member(*summary.document, "trace");
  const json* said = said_trace != nullptr && said_trace->is_object() ? member(*said_trace, "bytes") : nullptr;
  if (said != nullptr && said->is_number_integer() && said->get<std::uintmax_t>() != trace_bytes) {
    index.partial = fmt::format("trace.jsonl has {} bytes, its summary.json says {}", trace_bytes, said->dump());
  }
  summary_facts(*summary.document, &records, index);
  return index;
}

}  // namespace ophook::cli
