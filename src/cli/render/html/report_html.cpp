#include "render/html/report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "render/html/html_page.hpp"
#include "render/html/svg_chart.hpp"
#include "render/report_text.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {

namespace {

std::string nonfinite_op(const RunReport& report) {
  if (!report.first_nonfinite) return "";
  if (report.first_nonfinite->record != nullptr) return report.first_nonfinite->record->op;
  const auto& s = report.first_nonfinite->from_summary;
  return s.contains("op") && s["op"].is_string() ? s["op"].get<std::string>() : "";
}

void add_bars(const RunReport& report, HtmlPage& page, std::size_t top, bool by_time) {
  std::vector<const OpTotals*> ops;
  for (const OpTotals& t : report.counts.ops) ops.push_back(&t);
  if (by_time) {
    std::stable_sort(ops.begin(), ops.end(), [](const OpTotals* a, const OpTotals* b) {
      return a->total_ns > b->total_ns;
    });
  }
  const std::string bad_op = nonfinite_op(report);
  std::vector<Bar> bars;
  for (std::size_t i = 0; i < ops.size() && i < top; ++i) {
    const OpTotals& t = *ops[i];
    bars.push_back({t.op, by_time ? t.total_ns : static_cast<double>(t.calls),
                    by_time ? format_duration_ns(t.total_ns) : std::to_string(t.calls),
                    t.op == bad_op});
  }
  page.heading(fmt::format("{} per op (top {} of {})", by_time ? "Time" : "Calls", bars.size(),
                           report.counts.ops.size()));
  page.raw(svg_bar_chart(bars));
}

void add_timeline(const RunReport& report, HtmlPage& page) {
  std::map<std::pair<std::size_t, std::int64_t>, std::size_t> lane_of;
  std::vector<std::string> lanes;
  std::vector<Span> spans;
  for (std::size_t p = 0; p < report.processes.size(); ++p) {
    for (const TraceRecord& r : report.processes[p].records) {
      auto [it, inserted] = lane_of.emplace(std::make_pair(p, r.tid), lanes.size());
      if (inserted) lanes.push_back(fmt::format("{} tid {}", report.processes[p].label, r.tid));
      spans.push_back({it->second, static_cast<double>(r.t_ns),
                       static_cast<double>(r.t_ns + std::max<std::int64_t>(r.dur_ns, 0)), r.op});
    }
  }
  std::optional<double> marker;
  std::string marker_label;
  if (report.first_nonfinite && report.first_nonfinite->record != nullptr) {
    marker = static_cast<double>(report.first_nonfinite->record->t_ns);
    marker_label = "first NaN/Inf: " + report.first_nonfinite->record->op;
  }
  page.heading("Timeline");
  page.paragraph(
      "One lane per process and thread; calls closer than a pixel are merged into one "
      "grey box (hover for details). The red line marks the first NaN/Inf.",
      "note");
  page.raw(svg_timeline(lanes, std::move(spans), marker, marker_label));
}

/// One monitored process's loss and gradient norm per step, its trigger steps in red.
void add_monitor_charts(const ProcessRun& process, bool many, HtmlPage& page) {
  const MonitorLog& log = process.monitor;
  std::set<std::int64_t> fired;
  for (const MonitorTrigger& trigger : log.triggers) fired.insert(trigger.step);
  const std::optional<double> marker =
      fired.empty() ? std::nullopt : std::optional<double>(static_cast<double>(*fired.begin()));
  page.heading("Training monitor" + (many ? " (" + process.label + ")" : std::string()));
  page.paragraph(fmt::format("{} steps from monitor.jsonl, log scale; steps where a trigger fired in red, the "
                             "first one marked.",
                             log.steps),
                 "note");
  for (const auto& [name, field] : {std::pair{"loss", &MonitorPoint::loss}, std::pair{"grad_norm", &MonitorPoint::grad_norm}}) {
    std::vector<ErrorPoint> points;
    for (const MonitorPoint& p : log.points) {
      if (!(p.*field)) continue;
      const double value = *(p.*field);
      points.push_back({static_cast<double>(p.step), std::max(0.0, value), fired.contains(p.step),
                        fmt::format("step {}: {} {:.6g}", p.step, name, value)});
    }
    if (points.empty()) continue;
    page.heading(name, 3);
    page.raw(svg_error_chart(points, {}, marker, "step"));
  }
}

/// The monitored processes' charts: those whose rules fired first, at most kMonitorCharts.
void add_monitor(const RunReport& report, HtmlPage& page) {
  constexpr std::size_t kMonitorCharts = 4;
  std::vector<const ProcessRun*> shown;
  for (const bool with_triggers : {true, false}) {
    for (const ProcessRun& p : report.processes) {
      if (p.monitor.steps > 0 && p.monitor.triggers.empty() != with_triggers && shown.size() < kMonitorCharts) {
        shown.push_back(&p);
      }
    }
  }
  for (const ProcessRun* p : shown) add_monitor_charts(*p, report.processes.size() > 1, page);
}

void add_op_table(const RunReport& report, HtmlPage& page) {
  page.heading("All ops");
  std::vector<std::vector<std::string>> rows;
  for (const OpTotals& t : report.counts.ops) {
    rows.push_back({t.op, std::to_string(t.calls), format_duration_ns(t.total_ns),
                    format_duration_ns(t.total_ns / static_cast<double>(t.calls)),
                    format_duration_ns(t.max_ns)});
  }
  page.table({"op", "calls", "total time", "mean", "max"}, rows);
}

}  // namespace

std::string render_report_html(const RunReport& report, std::size_t top) {
  HtmlPage page("ophook report: " + report.dir.string());
  page.facts(report_facts(report));
  if (report.first_nonfinite) {
    page.paragraph("first NaN/Inf: " + describe_nonfinite(report), "bad");
  } else {
    page.paragraph("no NaN/Inf recorded in any output", "ok");
  }
  for (const std::string& warning : report.warnings) page.paragraph("warning: " + warning, "note");
  add_bars(report, page, top, false);
  add_bars(report, page, top, true);
  add_monitor(report, page);
  add_timeline(report, page);
  add_op_table(report, page);
  return page.str();
}

}  // namespace ophook::cli
