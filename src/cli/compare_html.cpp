#include "compare_html.hpp"

#include <fmt/format.h>

#include "compare_referee.hpp"
#include "compare_text.hpp"
#include "html_page.hpp"
#include "svg_chart.hpp"
#include "text_format.hpp"

namespace ophook::cli {

namespace {

constexpr std::size_t kListed = 200;

std::string dash(const std::optional<std::string>& value) { return value ? *value : "-"; }

std::vector<std::string> record_cells(const TraceRecord* r) {
  if (r == nullptr) return {"-", "-", "-", "-", "-"};
  return {std::to_string(r->seq), r->op, dash(r->source), dash(r->module), dash(r->phase)};
}

void add_chart(const CompareResult& r, HtmlPage& page) {
  std::vector<ErrorPoint> points;
  points.reserve(r.pairs.size());
  for (const PairResult& pair : r.pairs) {
    const TraceRecord& b = r.base[pair.base];
    points.push_back(
        {static_cast<double>(b.seq), pair.max_abs, pair.differs,
         fmt::format("seq {} {}: max abs err {}", b.seq, b.op, format_error(pair.max_abs))});
  }
  std::vector<double> ticks;
  for (const AlignStep& step : r.steps) {
    if (step.base >= 0 && step.other < 0)
      ticks.push_back(static_cast<double>(r.base[step.base].seq));
    if (step.other >= 0 && step.base < 0)
      ticks.push_back(static_cast<double>(r.other[step.other].seq));
  }
  std::optional<double> marker;
  if (r.first_divergent_step) {
    const AlignStep& step = r.steps[*r.first_divergent_step];
    marker = static_cast<double>(step.base >= 0 ? r.base[step.base].seq : r.other[step.other].seq);
  }
  page.heading("Max abs error along the run");
  page.paragraph(
      "One point per paired call (the largest per pixel column); red: outside "
      "tolerance; orange ticks: unmatched calls.",
      "note");
  page.raw(svg_error_chart(points, ticks, marker, "seq"));
}

void add_first_divergence(const CompareResult& r, HtmlPage& page) {
  page.heading("First divergent call");
  if (!r.first_divergent_step) {
    page.paragraph("none");
    return;
  }
  const AlignStep& step = r.steps[*r.first_divergent_step];
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const char* side, const TraceRecord* rec) {
    std::vector<std::string> cells{side};
    for (std::string& c : record_cells(rec)) cells.push_back(std::move(c));
    rows.push_back(std::move(cells));
  };
  row("BASE", step.base >= 0 ? &r.base[step.base] : nullptr);
  row("NEW", step.other >= 0 ? &r.other[step.other] : nullptr);
  page.table({"run", "seq", "op", "source", "module", "phase"}, rows);
  if (const PairResult* pair = r.pair_at_step(*r.first_divergent_step)) {
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
  for (const OpSummary& s : r.ops) {
    flagged.push_back(s.differing + s.unmatched_base + s.unmatched_new > 0);
    rows.push_back({s.op, std::to_string(s.pairs), std::to_string(s.differing),
                    s.has_errors ? format_error(s.max_abs) : "-",
                    s.rel_known() ? format_error(s.max_rel) : "-",
                    s.cosine_known() ? format_cosine(s.min_cosine) : "-", s.mismatch_text()});
  }
  page.table({"op", "pairs", "differing", "max abs err", "max rel err", "min cosine", "mismatches"},
             rows, flagged);
  if (r.uninitialized_values > 0) {
    page.paragraph(fmt::format("{} values not compared: uninitialized memory in both runs (outputs "
                               "of torch.empty & co., and the same bytes passed on).",
                               r.uninitialized_values),
                   "note");
  }
}

void add_differing(const CompareResult& r, HtmlPage& page) {
  if (r.differing_pairs == 0) return;
  page.heading(fmt::format("Differing calls ({}{})", r.differing_pairs,
                           r.differing_pairs > kListed ? fmt::format(", first {}", kListed) : ""));
  std::vector<std::vector<std::string>> rows;
  for (const PairResult& pair : r.pairs) {
    if (!pair.differs) continue;
    if (rows.size() == kListed) break;
    const auto reasons = pair_reasons(pair, 1);
    rows.push_back({r.base[pair.base].op, std::to_string(r.base[pair.base].seq),
                    std::to_string(r.other[pair.other].seq), format_error(pair.max_abs),
                    pair.cosine_known() ? format_cosine(pair.min_cosine) : "-",
                    reasons.empty() ? "" : reasons.front()});
  }
  page.table({"op", "BASE seq", "NEW seq", "max abs err", "min cosine", "first reason"}, rows);
}

void add_unmatched(const CompareResult& r, HtmlPage& page) {
  const std::size_t total = r.unmatched_base + r.unmatched_new;
  if (total == 0) return;
  page.heading(
      fmt::format("Unmatched calls ({} in BASE, {} in NEW)", r.unmatched_base, r.unmatched_new));
  std::vector<std::vector<std::string>> rows;
  for (const AlignStep& step : r.steps) {
    if (step.paired()) continue;
    if (rows.size() == kListed) break;
    const bool base = step.base >= 0;
    std::vector<std::string> cells{base ? "BASE only" : "NEW only"};
    for (std::string& c : record_cells(base ? &r.base[step.base] : &r.other[step.other])) {
      cells.push_back(std::move(c));
    }
    rows.push_back(std::move(cells));
  }
  page.table({"run", "seq", "op", "source", "module", "phase"}, rows);
}

}  // namespace

std::string render_compare_html(const CompareResult& r) {
  HtmlPage page("ophook compare");
  page.facts(
      {{"BASE", fmt::format("{} ({} calls)", r.base_dir.string(), r.base.size())},
       {"NEW", fmt::format("{} ({} calls)", r.new_dir.string(), r.other.size())},
       {"pairing", r.identical_sequences ? "identical op sequences"
                                         : "aligned by op name (longest common subsequence)"},
       {"tolerance", fmt::format("rtol={:g}, atol={:g}", r.tolerance.rtol, r.tolerance.atol)}});
  page.paragraph(verdict_text(r), r.same() ? "ok" : "bad");
  for (const std::string& warning : r.warnings) page.paragraph("warning: " + warning, "note");
  add_chart(r, page);
  add_first_divergence(r, page);
  add_op_table(r, page);
  add_referee_html(r, page);
  add_differing(r, page);
  add_unmatched(r, page);
  return page.str();
}

}  // namespace ophook::cli
