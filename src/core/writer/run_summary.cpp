#include "writer/run_summary.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <functional>

#include "capture/stats_memo.hpp"
#include "lines/record_json.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/config/config_json.hpp"
#include "ophook/files/output_dir.hpp"
#include "ophook/log.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"

namespace ophook::core {
namespace {

constexpr std::uint64_t kWaitWorthSaying = 10'000'000;  // ns the program waited for the writer

bool nonfinite(const ArrayOutcome& o) { return o.stats && (o.stats->nan || o.stats->inf); }

std::string human_bytes(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

RunSummary::RunSummary(const Recorder& recorder) : recorder_(recorder) {}

void RunSummary::observe(const CallRecord& record, const std::vector<ArrayOutcome>& outcomes) {
  ++calls_;
  ++level_calls_[static_cast<std::size_t>(recorder_.op(record.op_id).level)];
  ++phase_calls_[static_cast<std::size_t>(record.phase)];
  observe_step(record.step);
  if (record.module_id) ++module_calls_[record.module_id];
  const auto& op = recorder_.op(record.op_id);
  const auto named = op.same_name_as != 0 ? op.same_name_as : record.op_id;  // counts go by name
  auto [it, fresh] = ops_.try_emplace(named);
  if (fresh) first_seen_.push_back(named);
  auto& totals = it->second;
  ++totals.count;
  totals.total_ns += record.dur_ns;
  totals.max_ns = std::max(totals.max_ns, record.dur_ns);
  totals.errors += record.has_error;

  const bool inputs_clean =
      !record.nonfinite_scalar_input &&
      std::none_of(outcomes.begin(), outcomes.end(), [](const ArrayOutcome& o) { return !o.is_output && nonfinite(o); });
  const bool outputs_bad = std::any_of(outcomes.begin(), outcomes.end(),
                                       [](const ArrayOutcome& o) { return o.is_output && nonfinite(o); });
  if (record.collective.group_id) {
    auto& group = groups_[record.collective.group_id];
    ++group.calls;
    group.last_group_seq = std::max(group.last_group_seq, record.collective.group_seq);
    group.ranks_id = record.collective.ranks_id;
    group.recent[group.calls % GroupCalls::kRecent] = {record.seq, record.collective.group_seq};
    if (!first_nonfinite_.is_null()) note_collective_before_culprit(record);
    // A collective's NaN/Inf came from another rank (or from the reduction on every rank alike):
    // never a culprit here. The first one received is what this rank's timeline starts from.
    if ((record.collective.received_nonfinite || (outputs_bad && inputs_clean)) && first_received_.is_null()) {
      using Json = nlohmann::ordered_json;
      const auto& c = record.collective;
      const auto source = source_text(record, recorder_);
      first_received_ = {{"seq", record.seq},
                         {"op", recorder_.op(record.op_id).name},
                         {"step", record.step},
                         {"phase", record.phase == Phase::None ? Json(nullptr) : Json(to_string(record.phase))},
                         {"source", source.empty() ? Json(nullptr) : Json(source)},
                         {"group", recorder_.text(c.group_id)},
                         {"group_seq", c.group_seq},
                         {"ranks", Json::parse(recorder_.text(c.ranks_id), nullptr, false)}};
    }
  } else if (record.nonfinite_expected) {
    ++totals.nonfinite_expected;
  } else if (record.nonfinite_new ||
             (inputs_clean && outputs_bad && !recorder_.op(record.op_id).uninitialized_output)) {
    ++totals.nonfinite;
    if (first_nonfinite_.is_null() || record.seq < first_nonfinite_["seq"].get<std::uint64_t>()) {
      using Json = nlohmann::ordered_json;
      if (!first_nonfinite_.is_null()) culprit_place_known_ = false;
      place_culprit(record.seq);
      const auto source = source_text(record, recorder_);
      first_nonfinite_ = {{"seq", record.seq},
                          {"op", recorder_.op(record.op_id).name},
                          {"step", record.step},
                          {"t_ns", record.t_ns},
                          {"source", source.empty() ? Json(nullptr) : Json(source)},
                          {"module", record.module_id ? Json(recorder_.text(record.module_id)) : Json(nullptr)},
                          {"phase", record.phase == Phase::None ? Json(nullptr) : Json(to_string(record.phase))}};
      if (record.forward_file_id) {
        first_nonfinite_["forward_source"] = fmt::format("{}:{}:{}", recorder_.text(record.forward_file_id),
                                                         record.forward_line, recorder_.text(record.forward_func_id));
      }
    }
  }

  if (slowest_.size() >= kSlowest && record.dur_ns <= slowest_.front().dur_ns) return;
  slowest_.push_back({record.dur_ns, record.seq, record.op_id, source_text(record, recorder_)});
  std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>{});
  if (slowest_.size() > kSlowest) {
    std::pop_heap(slowest_.begin(), slowest_.end(), std::greater<>{});
    slowest_.pop_back();
  }
}

void RunSummary::place_culprit(std::uint64_t seq) {
  for (const auto& [id, group] : groups_) {
    std::uint64_t before = 0;
    bool any_before = false;
    for (const auto& [recent_seq, group_seq] : group.recent) {
      if (group_seq == 0 || recent_seq >= seq) continue;  // an unused slot, or issued after it
      before = std::max(before, group_seq), any_before = true;
    }
    // Every kept collective came after it, and older ones were not kept: its place is unknown.
    if (!any_before && group.calls > GroupCalls::kRecent) culprit_place_known_ = false;
    collectives_before_culprit_[id] = before;
  }
}

void RunSummary::note_collective_before_culprit(const CallRecord& record) {
  if (record.seq >= first_nonfinite_["seq"].get<std::uint64_t>()) return;
  auto& last = collectives_before_culprit_[record.collective.group_id];
  last = std::max(last, record.collective.group_seq);
}

void RunSummary::observe_step(std::uint64_t step) {
  // Records come in seq order, and steps only grow: a run of steps is one range.
  if (!steps_.empty() && step >= steps_.back().first && step <= steps_.back().second + 1) {
    steps_.back().second = std::max(steps_.back().second, step);
  } else if (std::none_of(steps_.begin(), steps_.end(), [&](auto& r) { return step >= r.first && step <= r.second; })) {
    steps_.emplace_back(step, step);
  }
}

nlohmann::ordered_json RunSummary::counts_json() const {
  using Json = nlohmann::ordered_json;
  Json levels = Json::object(), phases = Json::object();
  for (std::size_t i = 0; i < level_calls_.size(); ++i) {
    if (level_calls_[i]) levels[std::string(to_string(static_cast<Level>(i)))] = level_calls_[i];
  }
  for (std::size_t i = 0; i < phase_calls_.size(); ++i) {
    if (!phase_calls_[i]) continue;
    const auto phase = static_cast<Phase>(i);
    phases[phase == Phase::None ? "none" : std::string(to_string(phase))] = phase_calls_[i];
  }
  Json modules = Json::object();
  for (const auto& [id, calls] : module_calls_) modules[recorder_.text(id)] = calls;
  RangeSet steps;
  steps.ranges = steps_;
  std::sort(steps.ranges.begin(), steps.ranges.end());
  return {{"levels", std::move(levels)},
          {"phases", std::move(phases)},
          {"modules", std::move(modules)},
          {"steps", steps.to_string()},
          {"last_step", steps_.empty() ? Json(nullptr) : Json(steps_.back().second)}};
}

void RunSummary::observe_config(const std::string& api_line) {
  if (configs_.size() < kMaxConfigs) {
    configs_.insert(api_line);
  } else {
    configs_truncated_ = configs_truncated_ || !configs_.contains(api_line);
  }
}

bool RunSummary::budget_allows(std::uint64_t bytes, const CallRecord& record) {
  if (budget_exhausted_) return false;
  if (bytes_written_ + bytes <= recorder_.config().max_bytes) return true;
  budget_exhausted_ = true;
  budget_exhausted_at_ = record.seq;
  budget_exhausted_at_step_ = record.step;
  log_warn("OPHOOK_MAX_BYTES={} reached at call {} ({}, step {}) after {} files ({} written): no more .npy "
                "files, the run continues in stats mode. To spend the budget where it matters: record fewer "
                "steps (OPHOOK_STEPS), save only some ops' arrays (OPHOOK_DUMP_INCLUDE), or keep only the "
                "latest calls' arrays until something goes wrong (OPHOOK_RING_BYTES)",
                recorder_.config().max_bytes, record.seq, recorder_.op(record.op_id).name, record.step, files_,
                human_bytes(bytes_written_));
  return false;
}

bool RunSummary::count_write_error(const std::string& what, int error) {
  if (write_errors_++ == 0) {
    first_write_error_ = what + ": " + std::strerror(error);
    return true;
  }
  return false;
}

nlohmann::ordered_json RunSummary::summary_json(std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits) const {
  using Json = nlohmann::ordered_json;
  const auto& config = recorder_.config();
  Json ops = Json::object();
  for (auto id : first_seen_) {
    const auto& t = ops_.at(id);
    ops[recorder_.op(id).name] = {{"level", to_string(recorder_.op(id).level)},
                                  {"count", t.count},
                                  {"total_ns", t.total_ns},
                                  {"mean_ns", t.count ? t.total_ns / static_cast<std::int64_t>(t.count) : 0},
                                  {"max_ns", t.max_ns},
                                  {"errors", t.errors},
                                  {"nonfinite", t.nonfinite},
                                  {"nonfinite_expected", t.nonfinite_expected}};
  }
  auto slowest = slowest_;
  std::sort(slowest.begin(), slowest.end(), std::greater<>{});
  Json slow = Json::array();
  for (const auto& s : slowest) {
    slow.push_back({{"seq", s.seq},
                    {"op", recorder_.op(s.op_id).name},
                    {"dur_ns", s.dur_ns},
                    {"source", s.source.empty() ? Json(nullptr) : Json(s.source)}});
  }
  Json out;
  out["ophook_version"] = OPHOOK_VERSION;
  out["pid"] = ::getpid();
  out["root_pid"] = recorder_.root_pid();
  out["start_t_ns"] = recorder_.start_t_ns();
  out["output"] = recorder_.output_path();
  out["totals"] = {{"calls", calls_},
                   {"ops", ops_.size()},
                   {"files", files_},
                   {"files_linked", files_linked_},
                   {"bytes_named", bytes_named_},
                   {"bytes_written", bytes_written_},
                   {"write_errors", write_errors_},
                   {"record_errors", record_errors_},
                   {"files_not_written_at_termination", unwritten_at_termination_},
                   {"dropped_after_exit", dropped},
                   {"tensors_copied_by_torch", recorder_.counters().tensors_copied_by_torch()}};
  out["budget"] = {{"max_bytes", config.max_bytes},
                   {"used_bytes", bytes_written_},
                   {"exhausted", budget_exhausted_},
                   {"exhausted_at_seq", budget_exhausted_ ? Json(budget_exhausted_at_) : Json(nullptr)},
                   {"exhausted_at_step", budget_exhausted_ ? Json(budget_exhausted_at_step_) : Json(nullptr)}};
  out["store_once"] = store_once_;
  out["ring"] = ring_;
  const StatsMemoCounts summaries = stats_memo_counts();
  out["summaries_in_place"] = {{"computed", summaries.computed}, {"remembered", summaries.remembered}};
  const CopyMemoCounts copies = copy_memo_counts();
  out["copies_shared"] = {{"copied", copies.copied}, {"shared", copies.shared}};
  out["write_errors"] = {{"count", write_errors_},
                         {"first", write_errors_ ? Json(first_write_error_) : Json(nullptr)},
                         {"stopped", stopped_}};
  out["queue"] = {{"cap_bytes", config.queue_bytes},
                  {"producer_waits", producer_waits.count},
                  {"producer_wait_ms", static_cast<double>(producer_waits.ns) / 1e6}};
  out["first_nonfinite"] = first_nonfinite_;
  if (first_nonfinite_.is_object()) {
    Json before = Json::object();
    for (const auto& [id, last] : collectives_before_culprit_) before[recorder_.text(id)] = last;
    out["first_nonfinite"]["after_collective"] = culprit_place_known_ ? std::move(before) : Json(nullptr);
  }
  out["first_received_nonfinite"] = first_received_;
  out["recorded"] = counts_json();
  Json collectives = Json::object();
  for (const auto& [id, group] : groups_) {
    collectives[recorder_.text(id)] = {{"calls", group.calls},
                                       {"last_group_seq", group.last_group_seq},
                                       {"ranks", Json::parse(recorder_.text(group.ranks_id), nullptr, false)}};
  }
  out["collectives"] = std::move(collectives);
  out["trace"] = {{"bytes", trace_bytes_}};
  out["ops"] = std::move(ops);
  out["slowest"] = std::move(slow);
  out["api_configs_truncated"] = configs_truncated_;
  out["config"] = config_to_json(config);
  return out;
}

std::string RunSummary::statistics_text() const {
  std::string out = fmt::format("Total APIs: {}\nTotal API calls: {}\n\n", ops_.size(), calls_);
  for (auto id : first_seen_) {
    const auto& t = ops_.at(id);
    const double share = calls_ ? 100.0 * static_cast<double>(t.count) / static_cast<double>(calls_) : 0.0;
    out += fmt::format("{}: {} ({:.2f}%)  total {:.3f} ms  mean {:.3f} us  max {:.3f} us\n",
                       recorder_.op(id).name, t.count, share, static_cast<double>(t.total_ns) / 1e6,
                       static_cast<double>(t.total_ns) / 1e3 / static_cast<double>(t.count),
                       static_cast<double>(t.max_ns) / 1e3);
  }
  // After the seed's per-API lines, which tools parse: the calls each level gave.
  out += "\nCalls per level:\n";
  for (std::size_t i = 0; i < level_calls_.size(); ++i) {
    if (level_calls_[i]) out += fmt::format("  {}: {}\n", to_string(static_cast<Level>(i)), level_calls_[i]);
  }
  return out;
}

void RunSummary::write_files(OutputDir& dir, std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits) {
  std::set<std::string> names;
  for (auto id : first_seen_) names.insert(recorder_.op(id).name);
  std::string apis, configs;
  for (const auto& n : names) apis += n + '\n';
  // Sorted, as the seed's api_configs: the set is unordered for speed while recording.
  std::vector<std::string_view> sorted(configs_.begin(), configs_.end());
  std::sort(sorted.begin(), sorted.end());
  for (auto c : sorted) configs += std::string(c) + '\n';
  const auto write = [&](const char* name, const std::string& text) {
    if (auto r = dir.write_file(name, text); !r.ok) {
      count_write_error(name, r.error);
      log_error("cannot write {}/{}: {}", dir.path(), name, r.message());
    }
  };
  write("api_apis.txt", apis);
  write("api_configs.txt", configs);
  write("api_statistics.txt", statistics_text());
  // Last, so that it counts the failures of the files above.
  auto summary = summary_json(dropped, producer_waits);
  recorder_.facts().merge_into(summary);
  // A path from a non-UTF-8 locale (OPHOOK_OUTPUT, a source file) must not make dump() throw.
  write("summary.json", summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n');
  // Bytes written; a link to an earlier file of the same content costs none.
  const auto links = files_linked_ ? fmt::format(" written, {} of them links to earlier files", files_linked_) : "";
  const auto ring = ring_.is_object() ? fmt::format(", the ring written on {} trigger(s)", ring_["triggers"].size()) : "";
  // Why a dump run was slower than its copies explain, said where it matters.
  const auto waited = producer_waits.ns >= kWaitWorthSaying
                          ? fmt::format(", the program waited {:.2f} s for the writer", static_cast<double>(producer_waits.ns) / 1e9)
                          : "";
  log_info("recorded {} calls of {} ops, {} files ({}{}) into {}{}{}{}", calls_, ops_.size(), files_,
                human_bytes(bytes_written_), links, dir.path(), ring,
                write_errors_ ? fmt::format(", {} write errors", write_errors_) : "", waited);
}

}  // namespace ophook::core
