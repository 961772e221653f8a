#include "render/report_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "compare/result.hpp"
#include "render/rank_chain_text.hpp"
#include "render/text_format.hpp"
#include "report/composition.hpp"

namespace ophook::cli {

using nlohmann::json;

namespace {

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

/// "rank1, rank4 (2 ranks)" for the first ranks of a parting's list and its size.
std::string parted_ranks(const std::vector<std::int64_t>& kept, std::size_t count) {
  std::vector<std::int64_t> sorted = kept;
  std::sort(sorted.begin(), sorted.end());
  const std::string named = rank_ranges(sorted, kPartedRanksKept);
  return count > kept.size() ? fmt::format("{} … ({} ranks)", named, count) : named;
}

/// Where the replicas parted (OPHOOK_REPLICAS) and the calls where they part, when recorded.
void add_replica_facts(const RunReport& report, std::vector<std::pair<std::string, std::string>>& facts) {
  if (!report.replicas) return;
  const ReplicaParting& r = *report.replicas;
  const auto& p = r.parted;
  facts.emplace_back("replicas", fmt::format("parted at step {}: {} on {}{} (process group {})", p.step, p.parameter,
                                             parted_ranks(p.ranks, p.ranks_count),
                                             p.agreeing.empty() ? ", no value held by most"
                                                                : ", against " + parted_ranks(p.agreeing, p.agreeing_count),
                                             p.group));
  const auto parted = parted_rank(p), agreeing = agreeing_rank(p);
  if (!r.compared) {
    facts.emplace_back("", fmt::format("the calls where they part: the records of rank{} and rank{} are needed, not "
                                       "both here",
                                       parted.value_or(-1), agreeing.value_or(-1)));
    return;
  }
  const std::string steps = r.from_step == p.step ? fmt::format("step {}", p.step)
                                                  : fmt::format("steps {}-{}", r.from_step, p.step);
  facts.emplace_back("", fmt::format("rank{} against rank{} over {} (since the last check that agreed):", *parted,
                                     *agreeing, steps));
  if (r.only_one) {
    facts.emplace_back("", fmt::format("  first call only rank{} made: {}", r.only_one_by_parted ? *parted : *agreeing,
                                       record_summary(*r.only_one)));
  } else {
    facts.emplace_back("", fmt::format("  first call only {} made: none",
                                       p.agreeing.empty() ? "one of them" : fmt::format("rank{}", *parted)));
  }
  if (r.values == 0) {
    facts.emplace_back("", "  first call apart: not told (no values recorded: record in stats or dump mode)");
  } else if (!r.first_apart) {
    facts.emplace_back("", "  first call apart: none (no call's array inputs agreed while its outputs did not)");
  } else {
    facts.emplace_back("", fmt::format("  first {}: {}",
                                       r.collective ? "collective whose outputs disagree (a communication fault)"
                                                    : "call apart (its array inputs agree, its outputs do not)",
                                       record_summary(*r.first_apart)));
    for (const std::string& reason : r.reasons) facts.emplace_back("", "    " + reason);
  }
}

void print_top(const RunReport& report, std::ostream& out, std::size_t top, bool by_time) {
  std::vector<const OpTotals*> ops;
  for (const OpTotals& t : report.counts.ops) ops.push_back(&t);
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
        by_time ? (report.counts.total_ns > 0 ? 100 * t.total_ns / report.counts.total_ns : 0)
                : 100.0 * static_cast<double>(t.calls) /
                      static_cast<double>(std::max<std::uint64_t>(1, report.counts.calls));
    rows.push_back({t.op, std::to_string(t.calls), format_duration_ns(t.total_ns),
                    format_duration_ns(t.total_ns / static_cast<double>(t.calls)),
                    format_duration_ns(t.max_ns), fmt::format("{:.1f}%", share)});
  }
  out << render_table({"op", "calls", "total time", "mean", "max", "share"}, rows);
}

/// Up to this many processes are listed one by one; more are summarised.
constexpr std::size_t kListedProcesses = 8;
/// The processes named on a summarised line: the outliers, the missing, the partial.
constexpr std::size_t kNamedProcesses = 5;

/// "4 (root: 12 calls; rank0: 177 calls; ...)", or for many processes their calls summarised
/// with the outliers named: "4097 (root: 12 calls; 4096 ranks rank0-4095: 177 calls each, min 90
/// ... )".
std::string processes_text(const RunReport& report) {
  auto one = [](const ProcessRun& p) {
    return fmt::format("{}: {}", p.label, p.counted() ? fmt::format("{} calls", p.index.counts.calls) : "no trace.jsonl");
  };
  std::vector<std::string> listed;
  if (report.processes.size() <= kListedProcesses) {
    for (const ProcessRun& p : report.processes) listed.push_back(one(p));
    return fmt::format("{} ({})", report.processes.size(), fmt::join(listed, "; "));
  }
  std::vector<std::size_t> others;  // all but the root, which has its own entry
  std::vector<std::uint64_t> calls;
  for (std::size_t i = 1; i < report.processes.size(); ++i) {
    others.push_back(i);
    calls.push_back(report.processes[i].index.counts.calls);
  }
  std::vector<std::uint64_t> sorted = calls;
  std::sort(sorted.begin(), sorted.end());
  const std::uint64_t median = sorted[sorted.size() / 2];
  // An outlier's calls differ from the median's by more than a tenth: a rank that stopped early,
  // took another branch, or recorded another program.
  const auto deviation = [&](std::size_t k) {
    return calls[k] > median ? calls[k] - median : median - calls[k];
  };
  std::vector<std::size_t> outliers;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    if (static_cast<double>(deviation(k)) > std::max(1.0, 0.1 * static_cast<double>(median))) outliers.push_back(k);
  }
  std::stable_sort(outliers.begin(), outliers.end(), [&](std::size_t a, std::size_t b) { return deviation(a) > deviation(b); });
  std::string text = fmt::format("{} ({}; {}: calls min {}, median {}, max {}", report.processes.size(),
                                 one(report.processes.front()), rank_list(report, others), sorted.front(),
                                 median, sorted.back());
  if (outliers.empty()) return text + ")";
  std::vector<std::string> named;
  for (std::size_t i = 0; i < std::min(kNamedProcesses, outliers.size()); ++i) {
    named.push_back(one(report.processes[others[outliers[i]]]));
  }
  const std::size_t more = outliers.size() - named.size();
  return text + fmt::format("; outliers {}{})", fmt::join(named, ", "), more ? fmt::format(" and {} more", more) : "");
}

/// The "incomplete" lines: ranks missing, processes partial, directories stale; none when the run is whole.
void add_incomplete_facts(const RunReport& report, std::vector<std::pair<std::string, std::string>>& facts) {
  if (!report.incomplete()) return;
  std::vector<std::string> lines;
  if (!report.missing_ranks.empty()) {
    lines.push_back(fmt::format("{} rank{} missing (no directory): {}", report.missing_ranks.size(),
                                report.missing_ranks.size() == 1 ? "" : "s",
                                rank_ranges(report.missing_ranks, kNamedProcesses)));
  }
  if (!report.partial.empty()) {
    std::vector<std::string> named;
    for (std::size_t i = 0; i < std::min(kNamedProcesses, report.partial.size()); ++i) {
      const ProcessRun& p = report.processes[report.partial[i]];
      named.push_back(fmt::format("{} ({})", p.label, p.index.partial));
    }
    lines.push_back(fmt::format("{} partial (counted from the records): {}{}", report.partial.size(), fmt::join(named, "; "),
                                report.partial.size() > named.size() ? "; …" : ""));
  }
  if (!report.stale.empty()) {
    const std::size_t shown = std::min(kNamedProcesses, report.stale.size());
    lines.push_back(fmt::format("{} left by an earlier run, left out: {}{}", report.stale.size(),
                                fmt::join(report.stale.begin(), report.stale.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                                report.stale.size() > shown ? ", …" : ""));
  }
  for (std::size_t i = 0; i < lines.size(); ++i) facts.emplace_back(i == 0 ? "incomplete" : "", lines[i]);
}

/// One fact per distinct text over the processes (`label (rank0-4095)`), at most kNamedProcesses
/// lines: a budget or a write-error count the ranks share is said once.
void add_shared_facts(const RunReport& report, const std::string& label,
                      const std::function<std::string(const ProcessIndex&)>& text_of,
                      std::vector<std::pair<std::string, std::string>>& facts) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> texts;  // in first-seen order
  std::map<std::string, std::size_t> where;
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    std::string text = text_of(report.processes[i].index);
    if (text.empty()) continue;
    auto [it, fresh] = where.emplace(text, texts.size());
    if (fresh) texts.emplace_back(std::move(text), std::vector<std::size_t>());
    texts[it->second].second.push_back(i);
  }
  const bool one_process = report.processes.size() == 1;
  for (std::size_t k = 0; k < std::min(kNamedProcesses, texts.size()); ++k) {
    const auto& [text, processes] = texts[k];
    facts.emplace_back(one_process ? label : fmt::format("{} ({})", label, rank_list(report, processes)), text);
  }
  if (texts.size() > kNamedProcesses) {
    facts.emplace_back("", fmt::format("… and {} other {} texts", texts.size() - kNamedProcesses, label));
  }
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
  facts.emplace_back("processes", processes_text(report));
  add_incomplete_facts(report, facts);
  facts.emplace_back("calls", fmt::format("{} in {} distinct ops, {} inside recorded calls", report.counts.calls,
                                          report.counts.ops.size(), format_duration_ns(report.counts.total_ns)));
  std::uint64_t files = 0, bytes = 0;
  bool from_summary = false;
  for (const ProcessRun& p : report.processes) {
    if (p.index.files) files += *p.index.files, from_summary = true;
    if (p.index.bytes_written) bytes += *p.index.bytes_written, from_summary = true;
  }
  facts.emplace_back("files", from_summary
                                  ? fmt::format("{} .npy files, {}", files, format_bytes(bytes))
                                  : "unknown (no summary.json)");
  for (auto& fact : composition_facts(report)) facts.push_back(std::move(fact));
  facts.emplace_back("first NaN/Inf", describe_nonfinite(report));
  // Bounded whatever the number of ranks: the ranks reached at one collective share a line.
  constexpr std::size_t kRankChainLines = 12;
  const auto chain = describe_rank_chain(report, report.ranks, kRankChainLines);
  for (std::size_t i = 0; i < chain.size(); ++i) facts.emplace_back(i == 0 ? "across ranks" : "", chain[i]);
  add_monitor_facts(report, facts);
  add_replica_facts(report, facts);
  add_shared_facts(report, "budget", [](const ProcessIndex& i) { return i.budget.is_null() ? "" : budget_text(i.budget); },
                   facts);
  add_shared_facts(report, "write errors",
                   [](const ProcessIndex& i) { return i.write_errors.is_null() ? "" : write_errors_text(i.write_errors); },
                   facts);
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
