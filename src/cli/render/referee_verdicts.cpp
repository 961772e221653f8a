#include "render/referee_verdicts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "render/json_text.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {
namespace {

std::string rel_text(const std::optional<double>& value) { return value ? format_error(*value) : "-"; }

/// "NEW 2.8e+03x further", the reason nothing was judged, or "".
std::string verdict_note(const RefereeVerdict& v) {
  if (!v.closer) return v.reason;
  if (*v.closer == "tie" || !v.base_max_rel || !v.new_max_rel) return "";
  const double closer = std::min(*v.base_max_rel, *v.new_max_rel);
  const double further = std::max(*v.base_max_rel, *v.new_max_rel);
  const char* far_side = *v.closer == "base" ? "NEW" : "BASE";
  if (closer == 0) return fmt::format("{} off, {} exact", far_side, *v.closer == "base" ? "BASE" : "NEW");
  return fmt::format("{} {:.3g}x further", far_side, further / closer);
}

std::string closer_text(const RefereeVerdict& v) {
  if (!v.closer) return "-";
  if (*v.closer == "tie") return "tie";
  return *v.closer == "base" ? "BASE" : "NEW";
}

std::vector<std::string> verdict_row(const ComparedOp& s) {
  const RefereeVerdict& v = *s.referee;
  return {s.op, fmt::format("{}/{}", v.pairs_judged, v.pairs_asked), closer_text(v), rel_text(v.base_max_rel),
          rel_text(v.new_max_rel), verdict_note(v)};
}

const std::vector<std::string> kHeader{"op", "judged", "closer", "BASE max rel", "NEW max rel", "note"};

}  // namespace

void print_referee_text(const CompareResult& result, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  for (const ComparedOp& s : result.ops) {
    if (s.referee) rows.push_back(verdict_row(s));
  }
  if (rows.empty()) return;
  out << "\nreferee float64 (each run's recorded outputs against its own calls re-run in float64;\n"
         "max relative error over the judged differing pairs, the smaller is closer):\n";
  out << render_table(kHeader, rows);
}

nlohmann::ordered_json referee_json(const RefereeVerdict& v) {
  auto number = [](const std::optional<double>& x) { return x ? number_json<nlohmann::ordered_json>(*x) : nlohmann::ordered_json(); };
  return {{"closer", v.closer ? nlohmann::ordered_json(*v.closer) : nlohmann::ordered_json()},
          {"base_max_rel", number(v.base_max_rel)},
          {"new_max_rel", number(v.new_max_rel)},
          {"pairs_judged", v.pairs_judged},
          {"pairs_asked", v.pairs_asked},
          {"reason", v.reason}};
}

void add_referee_html(const CompareResult& result, HtmlPage& page) {
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> flagged;
  for (const ComparedOp& s : result.ops) {
    if (!s.referee) continue;
    rows.push_back(verdict_row(s));
    flagged.push_back(s.referee->closer == "base");  // the new run moved away from float64
  }
  if (rows.empty()) return;
  page.heading("Referee float64: which run is closer");
  page.paragraph(
      "Each run's recorded outputs against its own calls re-run in float64 on its recorded inputs; "
      "max relative error over the judged differing pairs. Highlighted: ops where NEW is further.",
      "note");
  page.table(kHeader, rows, flagged);
}

}  // namespace ophook::cli
