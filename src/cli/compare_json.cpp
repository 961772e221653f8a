#include "compare_json.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "compare_referee.hpp"
#include "compare_text.hpp"
#include "ophook/error.hpp"

namespace ophook::cli {

using json = nlohmann::ordered_json;

namespace {

/// One line of JSON; invalid UTF-8 (from file names) is replaced rather than thrown on.
std::string compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json nullable(const std::optional<std::string>& value) { return value ? json(*value) : json(); }

json record_json(const TraceRecord& r) {
  return {{"seq", r.seq},
          {"op", r.op},
          {"source", nullable(r.source)},
          {"module", nullable(r.module)},
          {"phase", nullable(r.phase)},
          {"line", r.line}};
}

json value_json(const ValueResult& v) {
  const ArrayDiff& d = v.diff;
  const std::string base = v.base_text(), other = v.new_text();
  json j = {{"path", v.path()},
            {"method", to_string(v.method)},
            {"differs", v.differs()},
            {"base", base.empty() ? json() : json(base)},
            {"new", other.empty() ? json() : json(other)},
            {"shape_mismatch", d.shape_mismatch},
            {"dtype_mismatch", d.dtype_mismatch}};
  if (d.compared) {
    j["bitwise_equal"] = d.bitwise_equal;
    j["elements"] = d.elements;
    j["not_close"] = d.not_close;
    j["nonfinite_mismatch"] = d.nonfinite_mismatch;
    j["max_abs_err"] = number_json(d.max_abs);
    j["max_rel_err"] = std::isnan(d.max_rel) ? json() : number_json(d.max_rel);
    j["cosine"] = std::isnan(d.cosine) ? json() : number_json(d.cosine);
    j["worst_index"] = d.worst_index >= 0 ? json(d.worst_index) : json();
  }
  return j;
}

json pair_json(const CompareResult& r, const PairResult& pair) {
  json values = json::array();
  for (const ValueResult& v : pair.values) values.push_back(value_json(v));
  return {{"base_seq", r.base[pair.base].seq},
          {"new_seq", r.other[pair.other].seq},
          {"op", r.base[pair.base].op},
          {"differs", pair.differs},
          {"max_abs_err", number_json(pair.max_abs)},
          {"max_rel_err", pair.rel_known() ? number_json(pair.max_rel) : json()},
          {"min_cosine", pair.cosine_known() ? number_json(pair.min_cosine) : json()},
          {"exception", pair.error_note.empty() ? json() : json(pair.error_note)},
          {"values", std::move(values)}};
}

json op_json(const OpSummary& s) {
  json j = {{"op", s.op},
          {"pairs", s.pairs},
          {"differing", s.differing},
          {"max_abs_err", s.has_errors ? number_json(s.max_abs) : json()},
          {"max_rel_err", s.rel_known() ? number_json(s.max_rel) : json()},
          {"min_cosine", s.cosine_known() ? number_json(s.min_cosine) : json()},
          {"values_not_close", s.not_close_values},
          {"shape_mismatches", s.shape_mismatches},
          {"dtype_mismatches", s.dtype_mismatches},
          {"nonfinite_mismatches", s.nonfinite_mismatches},
          {"one_sided_values", s.missing_values},
          {"exception_mismatches", s.error_mismatches},
          {"unmatched_base", s.unmatched_base},
          {"unmatched_new", s.unmatched_new},
          {"uninitialized_values", s.uninitialized_values}};
  if (s.referee) j["referee"] = referee_json(*s.referee);
  return j;
}

json first_divergence_json(const CompareResult& r) {
  if (!r.first_divergent_step) return json();
  const AlignStep& step = r.steps[*r.first_divergent_step];
  json j = {{"base", step.base >= 0 ? record_json(r.base[step.base]) : json()},
            {"new", step.other >= 0 ? record_json(r.other[step.other]) : json()},
            {"reasons", json::array()}};
  if (const PairResult* pair = r.pair_at_step(*r.first_divergent_step)) {
    j["reasons"] = pair_reasons(*pair, 16);
  }
  return j;
}

}  // namespace

json number_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

void write_compare_json(const CompareResult& r, std::ostream& out) {
  const json head = {{"base", {{"dir", r.base_dir.string()}, {"calls", r.base.size()}}},
                     {"new", {{"dir", r.new_dir.string()}, {"calls", r.other.size()}}},
                     {"rtol", r.tolerance.rtol},
                     {"atol", r.tolerance.atol},
                     {"verdict", r.same() ? "same" : "different"},
                     {"summary", verdict_text(r)},
                     {"identical_sequences", r.identical_sequences},
                     {"pairs_total", r.pairs.size()},
                     {"differing_pairs", r.differing_pairs},
                     {"unmatched_base", r.unmatched_base},
                     {"unmatched_new", r.unmatched_new},
                     {"uninitialized_values", r.uninitialized_values},
                     {"first_divergence", first_divergence_json(r)},
                     {"warnings", r.warnings}};
  // The head without its closing brace, then the long lists streamed item by item.
  std::string text = head.dump(1, ' ', false, json::error_handler_t::replace);
  text.resize(text.find_last_of('}'));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  out << text << ",\n \"ops\": [";
  for (std::size_t i = 0; i < r.ops.size(); ++i)
    out << (i ? ",\n  " : "\n  ") << compact(op_json(r.ops[i]));
  out << "\n ],\n \"unmatched\": [";
  bool first = true;
  for (const AlignStep& step : r.steps) {
    if (step.paired()) continue;
    json item = step.base >= 0 ? record_json(r.base[step.base]) : record_json(r.other[step.other]);
    item["side"] = step.base >= 0 ? "base" : "new";
    out << (first ? "\n  " : ",\n  ") << compact(item);
    first = false;
  }
  out << "\n ],\n \"pairs\": [";
  for (std::size_t i = 0; i < r.pairs.size(); ++i) {
    out << (i ? ",\n  " : "\n  ") << compact(pair_json(r, r.pairs[i]));
  }
  out << "\n ]\n}\n";
}

void write_compare_json_file(const CompareResult& result, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(fmt::format("{}: cannot be written: {}", path.string(), std::strerror(errno)));
  }
  write_compare_json(result, out);
  out.close();
  if (!out) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace ophook::cli
