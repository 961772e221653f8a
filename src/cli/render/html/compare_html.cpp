#include "render/html/compare_html.hpp"

#include <fmt/format.h>

#include "render/compare_text.hpp"
#include "render/html/html_page.hpp"
#include "render/html/svg_chart.hpp"
#include "render/referee_verdicts.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {

namespace {

constexpr std::size_t kRowsListed = 200;

std::string dash(const std::optional<std::string>& value) { return value ? *value : "-"; }

/// A seq cell: "17" in the root process, "pid4242:17" in another.
std::string seq_cell(const std::string& process, std::int64_t seq) {
  return process == "root" ? std::to_string(seq) : fmt::format("{}:{}", process, seq);
}

std::vector<std::string> record_cells(const std::string& process, const TraceRecord* r) {
  if (r == nullptr) return {"-", "-", "-", "-", "-", "-"};
  return {seq_cell(process, r->seq), r->op, dash(r->source), dash(r->module), dash(r->phase),
          std::to_string(r->step)};
}

/// The process the chart follows: the one of the first divergent call, else the first.
const ProcessComparison& charted_process(const CompareResult& r) {
  return r.processes[r.first_divergence ? r.first_divergence->process : 0];
}

void add_chart(const CompareResult& r, HtmlPage& page) {
  const ProcessComparison& p = charted_process(r);
  std::vector<ErrorPoint> points;
  points.reserve(p.pairs.size());
  for (const PairResult& pair : p.pairs) {
    const TraceRecord& b = p.base[pair.base];
    points.push_back(
        {static_cast<double>(b.seq), pair.max_abs, pair.differs,
         fmt::format("seq {} {}: max abs err {}", b.seq, b.op, format_error(pair.max_abs))});
  }
  std::vector<double> ticks;
  for (const AlignStep& step : p.steps) {
    if (step.base >= 0 && step.other < 0)
      ticks.push_back(static_cast<double>(p.base[step.base].seq));
    if (step.other >= 0 && step.base < 0)
      ticks.push_back(static_cast<double>(p.other[step.other].seq));
  }
  std::optional<double> marker;
  if (r.first_divergence) {
    const AlignStep& step = p.steps[r.first_divergence->step];
    marker = static_cast<double>(step.base >= 0 ? p.base[step.base].seq : p.other[step.other].seq);
  }
  page.heading(r.processes.size() > 1 ? "Max abs error along the run, process " + p.label()
                                      : std::string("Max abs error along the run"));
  page.paragraph(
      "One point per paired call (the largest per pixel column); red: outside "
      "tolerance; orange ticks: unmatched calls.",
      "note");
  page.raw(svg_error_chart(points, ticks, marker, "seq"));
}

void add_processes(const CompareResult& r, HtmlPage& page) {
  if (r.processes.size() < 2) return;
  page.heading("Processes");
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> flagged;
  for (const ProcessComparison& p : r.processes) {
    const CompareCounts& c = p.counts;
    flagged.push_back(c.verdict() == Verdict::Different);
    rows.push_back({p.base_name.empty() ? "-" : p.base_name, p.new_name.empty() ? "-" : p.new_name,
                    fmt::format("{} / {}", p.base_calls(), p.new_calls()), std::to_string(c.pairs),
                    std::to_string(c.values_compared), std::to_string(c.differing_pairs),
                    std::to_string(c.origins),
                    fmt::format("{}+{}", c.unmatched_base, c.unmatched_new)});
  }
  page.table({"BASE", "NEW", "calls", "pairs", "with values", "differing", "origins", "unmatched"},
             rows, flagged);
  page.paragraph(
      "Root with root, rank<R> with rank<R>, pid<PID> directories in the order their processes "
      "started.",
      "note");
}

void add_call(const CompareResult& r, const std::optional<CallRef>& call, const char* title,
              const char* none, HtmlPage& page) {
  page.heading(title);
  if (!call) {
    page.paragraph(none);
    return;
  }
  const ProcessComparison& p = r.processes[call->process];
  const AlignStep& step = p.steps[call->step];
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const char* side, const std::string& process, const TraceRecord* rec) {
    std::vector<std::string> cells{side};
    for (std::string& c : record_cells(process, rec)) cells.push_back(std::move(c));
    rows.push_back(std::move(cells));
  };
  row("BASE", p.base_name, step.base >= 0 ? &p.base[step.base] : nullptr);
  row("NEW", p.new_name, step.other >= 0 ? &p.other[step.other] : nullptr);
  page.table({"run", "seq", "op", "source", "module", "phase", "step"}, rows);
  if (const PairResult* pair = p.pair_at_step(call->step)) {
    page.paragraph(std::string("marked: ") + pair->marking(), "note");
    for (const std::string& reason : pair_reasons(*pair, 16)) page.paragraph(reason, "note");
  } else {
    page.paragraph(step.base >= 0 ? "extra call in BASE (no counterpart in NEW)"
                                  : "extra call in NEW (no counterpart in BASE)",
                   "note");
  }
}

void add_op_table(const CompareResult& r, HtmlPage& page) {
  page.heading("Per op");
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> flagged;
  for (const ComparedOp& s : r.ops) {
    flagged.push_back(s.differing + s.unmatched_base + s.unmatched_new > 0);
    rows.push_back({s.op, std::to_string(s.pairs), std::to_string(s.differing),
                    std::to_string(s.origins), s.has_errors ? format_error(s.max_abs) : "-",
                    s.rel_known() ? format_error(s.max_rel) : "-",
                    s.cosine_known() ? format_cosine(s.min_cosine) : "-", s.mismatch_text()});
  }
  page.table({"op", "pairs", "differing", "origins", "max abs err", "max rel err", "min cosine",
              "mismatches"},
             rows, flagged);
  if (r.counts.uninitialized_values > 0) {
    page.paragraph(fmt::format("{} values not compared: uninitialized memory in both runs (outputs "
                               "of torch.empty & co., and the same bytes passed on).",
                               r.counts.uninitialized_values),
                   "note");
  }
}

void add_differing(const CompareResult& r, HtmlPage& page) {
  const std::size_t differing = r.counts.differing_pairs;
  if (differing == 0) return;
  page.heading(fmt::format("Differing calls ({}, {} marked origin{})", differing, r.counts.origins,
                           differing > kRowsListed ? fmt::format(", first {}", kRowsListed) : ""));
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> origins;
  for (const ProcessComparison& p : r.processes) {
    for (const PairResult& pair : p.pairs) {
      if (!pair.differs) continue;
      if (rows.size() == kRowsListed) break;
      const auto reasons = pair_reasons(pair, 1);
      origins.push_back(pair.origin());
      rows.push_back({p.base[pair.base].op, seq_cell(p.base_name, p.base[pair.base].seq),
                      seq_cell(p.new_name, p.other[pair.other].seq), pair.marking(),
                      format_error(pair.max_abs),
                      pair.cosine_known() ? format_cosine(pair.min_cosine) : "-",
                      reasons.empty() ? "" : reasons.front()});
    }
  }
  page.table({"op", "BASE seq", "NEW seq", "marked", "max abs err", "min cosine", "first reason"},
             rows, origins);
}

void add_unmatched(const CompareResult& r, HtmlPage& page) {
  const CompareCounts& c = r.counts;
  if (c.unmatched_base + c.unmatched_new == 0) return;
  page.heading(
      fmt::format("Unmatched calls ({} in BASE, {} in NEW)", c.unmatched_base, c.unmatched_new));
  std::vector<std::vector<std::string>> rows;
  for (const ProcessComparison& p : r.processes) {
    for (const AlignStep& step : p.steps) {
      if (step.paired()) continue;
      if (rows.size() == kRowsListed) break;
      const bool base = step.base >= 0;
      std::vector<std::string> cells{base ? "BASE only" : "NEW only"};
      for (std::string& cell : base ? record_cells(p.base_name, &p.base[step.base])
                                    : record_cells(p.new_name, &p.other[step.other])) {
        cells.push_back(std::move(cell));
      }
      rows.push_back(std::move(cells));
    }
  }
  page.table({"run", "seq", "op", "source", "module", "phase", "step"}, rows);
}

}  // namespace

std::string render_compare_html(const CompareResult& r) {
  HtmlPage page("ophook compare");
  const bool one_process = r.processes.size() == 1;
  page.facts(
      {{"BASE", fmt::format("{} ({} calls)", r.base_dir.string(), r.base_calls)},
       {"NEW", fmt::format("{} ({} calls)", r.new_dir.string(), r.new_calls)},
       {"pairing", one_process && r.processes.front().identical_sequences
                       ? "identical op sequences"
                   : one_process ? "aligned by op name (longest common subsequence)"
                                 : fmt::format("{} process pairs", r.processes.size())},
       {"values compared", fmt::format("{} of {} paired calls", r.counts.values_compared,
                                       r.counts.pairs)},
       {"tolerance", fmt::format("rtol={:g}, atol={:g}", r.tolerance.rtol, r.tolerance.atol)}});
  page.paragraph(verdict_text(r), r.same() ? "ok" : "bad");
  for (const std::string& warning : r.warnings) page.paragraph("warning: " + warning, "note");
  add_chart(r, page);
  add_call(r, r.first_divergence, "First divergent call", "none", page);
  add_call(r, r.first_origin, "First origin",
           r.counts.differing_pairs > 0
               ? "none: every differing call had differing or unrecorded array inputs"
               : "none",
           page);
  add_processes(r, page);
  add_op_table(r, page);
  add_referee_html(r, page);
  add_differing(r, page);
  add_unmatched(r, page);
  return page.str();
}

}  // namespace ophook::cli
