#include "render/report_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "render/rank_chain_text.hpp"
#include "render/text_format.hpp"
#include "report/composition.hpp"

namespace ophook::cli {

using nlohmann::json;

namespace {

/// summary["totals"][key], else summary[key]; nullopt when absent or not a number.
std::optional<std::uint64_t> summary_count(const ProcessRun& process, const char* key) {
  if (!process.summary) return std::nullopt;
  const json& s = *process.summary;
  for (const json* scope : {s.contains("totals") ? &s["totals"] : nullptr, &s}) {
    if (scope == nullptr || !scope->is_object()) continue;
    auto it = scope->find(key);
    if (it != scope->end() && it->is_number_unsigned()) return it->get<std::uint64_t>();
    if (it != scope->end() && it->is_number_integer()) {
      return static_cast<std::uint64_t>(std::max<std::int64_t>(0, it->get<std::int64_t>()));
    }
  }
  return std::nullopt;
}

std::string budget_text(const json& budget) {
  if (!budget.is_object()) return budget.dump();
  std::string text;
  if (budget.contains("used_bytes") && budget["used_bytes"].is_number()) {
    text += format_bytes(budget["used_bytes"].get<std::uint64_t>()) + " used";
  }
  if (budget.contains("max_bytes") && budget["max_bytes"].is_number()) {
    text += (text.empty() ? "" : " of ") + format_bytes(budget["max_bytes"].get<std::uint64_t>());
  }
  const auto exhausted = budget.find("exhausted");
  if (exhausted != budget.end() && exhausted->is_boolean() && exhausted->get<bool>()) {
    const json at = budget.value("exhausted_at_seq", json());
    text += at.is_null()
                ? "; EXHAUSTED (continued in stats mode)"
                : fmt::format("; EXHAUSTED at seq {} (continued in stats mode)", at.dump());
  }
  return text.empty() ? budget.dump() : text;
}

std::string write_errors_text(const json& errors) {
  if (errors.is_number()) return errors.get<double>() == 0 ? "none" : errors.dump();
  if (errors.is_object()) {
    const json count = errors.value("count", json());
    if (count.is_number() && count.get<double>() == 0) return "none";
    const json first = errors.value("first", json());
    return fmt::format("{}{}", count.dump(),
                       first.is_string() ? " (first: " + first.get<std::string>() + ")" : "");
  }
  if (errors.is_array() && errors.empty()) return "none";
  return errors.dump();
}

std::string describe_origin(const SpikeOrigin& origin) {
  const TraceRecord& r = *origin.record;
  std::string text = fmt::format("seq={} op={} source={}", r.seq, r.op, r.source.value_or("-"));
  if (r.module) text += " module=" + *r.module;
  if (r.phase) text += " phase=" + *r.phase;
  const std::string size = origin.size ? fmt::format("max |x| {:.4g}", *origin.size) : std::string("no finite value");
  text += fmt::format(": {} {}", origin.value_path, size);
  if (origin.nonfinite > 0) text += fmt::format(" ({} NaN/Inf)", origin.nonfinite);
  return text + fmt::format(", was {:.4g} to {:.4g} in steps {}-{}", origin.low, origin.high, origin.from_step,
                            origin.to_step);
}

/// The monitor's lines: steps and triggers per process, each trigger step's spike origin. Bounded
/// whatever the number of ranks: the processes with triggers first, at most kMonitorProcesses.
void add_monitor_facts(const RunReport& report, std::vector<std::pair<std::string, std::string>>& facts) {
  constexpr std::size_t kMonitorProcesses = 8;
  std::size_t shown = 0, quiet = 0, monitored = 0;
  for (const ProcessRun& p : report.processes) {
    if (!p.monitor.present) continue;
    ++monitored;
    if (p.monitor.triggers.empty()) ++quiet;
  }
  if (monitored == 0) return;
  const bool many = report.processes.size() > 1;
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    const ProcessRun& p = report.processes[i];
    if (!p.monitor.present || (p.monitor.triggers.empty() && monitored > 1) || shown == kMonitorProcesses) continue;
    ++shown;
    const MonitorLog& log = p.monitor;
    facts.emplace_back("monitor" + (many ? " (" + p.label + ")" : std::string()),
                       fmt::format("{} steps ({}-{}), {} trigger{}", log.steps, log.first_step.value_or(0),
                                   log.last_step.value_or(0), log.triggers.size(), log.triggers.size() == 1 ? "" : "s"));
    std::vector<const SeriesRange*> moved;
    for (const SeriesRange& range : log.ranges) {
      if (range.spread() > 1) moved.push_back(&range);
    }
    constexpr std::size_t kMovedMost = 5;
    const std::size_t kept = std::min(kMovedMost, moved.size());
    std::partial_sort(moved.begin(), moved.begin() + static_cast<std::ptrdiff_t>(kept), moved.end(),
                      [](const SeriesRange* a, const SeriesRange* b) { return a->spread() > b->spread(); });
    std::string ranked;
    for (std::size_t k = 0; k < kept; ++k) {
      const SeriesRange& r = *moved[k];
      ranked += fmt::format("{}{} {:.3g} to {:.3g} (top at step {})", k ? "; " : "", r.name, r.low, r.high, r.high_step);
    }
    if (!ranked.empty()) facts.emplace_back("", "moved most: " + ranked);
    for (const SpikeFinding& spike : report.spikes) {
      if (spike.process != i) continue;
      facts.emplace_back("", fmt::format("step {}: {}", spike.trigger->step, describe_trigger(*spike.trigger)));
      facts.emplace_back("", spike.origin ? "  made by " + describe_origin(*spike.origin)
                                          : std::string("  made by: not in the records (record the run in stats or "
                                                        "dump mode, or with OPHOOK_RING_BYTES, to have it named)"));
      if (spike.inputs != nullptr) {
        std::vector<std::string> files;
        for (const ArraySpec& a : spike.inputs->arrays) {
          if (!a.is_output() && !a.file.empty()) files.push_back(a.path + " " + a.file);
        }
        facts.emplace_back("", fmt::format("  the step's inputs: seq={} op={}: {}", spike.inputs->seq, spike.inputs->op,
                                           fmt::join(files, ", ")));
      }
    }
  }
  if (monitored > 1) facts.emplace_back("", fmt::format("{} of {} monitored processes had no trigger", quiet, monitored));
}

void print_top(const RunReport& report, std::ostream& out, std::size_t top, bool by_time) {
  std::vector<const OpTotals*> ops;
  for (const OpTotals& t : report.ops) ops.push_back(&t);
  if (by_time) {
    std::stable_sort(ops.begin(), ops.end(), [](const OpTotals* a, const OpTotals* b) {
      return a->total_ns > b->total_ns;
    });
  }
  const std::size_t shown = std::min(top, ops.size());
  out << fmt::format("\ntop ops by {} ({} of {}):\n", by_time ? "total time" : "count", shown,
                     ops.size());
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < shown; ++i) {
    const OpTotals& t = *ops[i];
    const double share =
        by_time ? (report.total_ns > 0 ? 100 * t.total_ns / report.total_ns : 0)
                : 100.0 * static_cast<double>(t.calls) /
                      static_cast<double>(std::max<std::uint64_t>(1, report.total_calls));
    rows.push_back({t.op, std::to_string(t.calls), format_duration_ns(t.total_ns),
                    format_duration_ns(t.total_ns / static_cast<double>(t.calls)),
                    format_duration_ns(t.max_ns), fmt::format("{:.1f}%", share)});
  }
  out << render_table({"op", "calls", "total time", "mean", "max", "share"}, rows);
}

}  // namespace

std::string describe_nonfinite(const RunReport& report) {
  if (!report.first_nonfinite) return "none";
  const NonfiniteCall& hit = *report.first_nonfinite;
  const std::string where = report.processes[hit.process].label;
  if (hit.record != nullptr) {
    const TraceRecord& r = *hit.record;
    std::string text = fmt::format("seq={} op={} source={} step={}", r.seq, r.op, r.source.value_or("-"), r.step);
    if (r.module) text += " module=" + *r.module;
    // A compiled kernel's own modules: its `module` is the compiled callable's.
    if (!r.modules.empty()) text += fmt::format(" kernel_modules={}", fmt::join(r.modules, ","));
    if (r.phase) text += " phase=" + *r.phase;
    if (!hit.value_path.empty()) {
      text += fmt::format(" ({}: {} NaN, {} Inf)", hit.value_path, hit.nan, hit.inf);
    }
    return text + " in " + where;
  }
  const json& s = hit.from_summary;
  auto field = [&](const char* key) {
    auto it = s.find(key);
    return it == s.end() || it->is_null() ? std::string("-")
           : it->is_string()              ? it->get<std::string>()
                                          : it->dump();
  };
  return fmt::format("seq={} op={} source={} in {} (from summary.json)", field("seq"), field("op"),
                     field("source"), where);
}

std::vector<std::pair<std::string, std::string>> report_facts(const RunReport& report) {
  std::vector<std::pair<std::string, std::string>> facts;
  std::string processes;
  for (const ProcessRun& p : report.processes) {
    processes +=
        fmt::format("{}{}: {}", processes.empty() ? "" : "; ", p.label,
                    p.has_trace ? fmt::format("{} calls", p.records.size()) : "no trace.jsonl");
  }
  facts.emplace_back("processes", fmt::format("{} ({})", report.processes.size(), processes));
  facts.emplace_back(
      "calls", fmt::format("{} in {} distinct ops, {} inside recorded calls", report.total_calls,
                           report.ops.size(), format_duration_ns(report.total_ns)));
  std::uint64_t files = 0, bytes = 0;
  bool from_summary = false;
  for (const ProcessRun& p : report.processes) {
    if (auto f = summary_count(p, "files")) files += *f, from_summary = true;
    if (auto b = summary_count(p, "bytes_written")) bytes += *b, from_summary = true;
  }
  facts.emplace_back("files", from_summary
                                  ? fmt::format("{} .npy files, {}", files, format_bytes(bytes))
                                  : "unknown (no summary.json)");
  for (auto& fact : composition_facts(report)) facts.push_back(std::move(fact));
  facts.emplace_back("first NaN/Inf", describe_nonfinite(report));
  // Bounded whatever the number of ranks: the ranks reached at one collective share a line.
  constexpr std::size_t kRankChainLines = 12;
  const auto chain = describe_rank_chain(report, first_nonfinite_per_rank(report), kRankChainLines);
  for (std::size_t i = 0; i < chain.size(); ++i) facts.emplace_back(i == 0 ? "across ranks" : "", chain[i]);
  add_monitor_facts(report, facts);
  for (const ProcessRun& p : report.processes) {
    if (!p.summary) continue;
    const std::string suffix = report.processes.size() > 1 ? " (" + p.label + ")" : "";
    if (p.summary->contains("budget"))
      facts.emplace_back("budget" + suffix, budget_text((*p.summary)["budget"]));
    if (p.summary->contains("write_errors")) {
      facts.emplace_back("write errors" + suffix, write_errors_text((*p.summary)["write_errors"]));
    }
  }
  return facts;
}

void print_report_text(const RunReport& report, std::ostream& out, std::size_t top) {
  out << "ophook report: " << report.dir.string() << '\n';
  std::size_t width = 0;
  const auto facts = report_facts(report);
  for (const auto& [label, text] : facts) width = std::max(width, label.size());
  for (const auto& [label, text] : facts) out << fmt::format("  {:<{}}  {}\n", label, width, text);
  print_top(report, out, top, false);
  print_top(report, out, top, true);
}

}  // namespace ophook::cli
