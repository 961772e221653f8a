#include "render/compare_json.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "ophook/error.hpp"
#include "render/compare_text.hpp"
#include "render/json_text.hpp"
#include "render/referee_verdicts.hpp"

namespace ophook::cli {

using nlohmann::ordered_json;  // the keys in the order they are written

namespace {

/// The items of a list streamed one per line, so that memory does not grow with the run.
class StreamedList {
 public:
  explicit StreamedList(std::ostream& out) : out_(out) {}
  void add(const ordered_json& item) {
    out_ << (first_ ? "\n  " : ",\n  ") << compact(item);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

ordered_json record_json(const TraceRecord& r) {
  return {{"seq", r.seq},
          {"op", r.op},
          {"source", nullable<ordered_json>(r.source)},
          {"module", nullable<ordered_json>(r.module)},
          {"phase", nullable<ordered_json>(r.phase)},
          {"step", r.step},
          {"line", r.line}};
}

ordered_json name_json(const std::string& name) { return name.empty() ? ordered_json() : ordered_json(name); }

ordered_json value_json(const ValueResult& v) {
  const ArrayDiff& d = v.diff;
  const std::string base = v.base_text(), other = v.new_text();
  ordered_json j = {{"path", v.path()},
            {"method", to_string(v.method)},
            {"differs", v.differs()},
            {"base", base.empty() ? ordered_json() : ordered_json(base)},
            {"new", other.empty() ? ordered_json() : ordered_json(other)},
            {"shape_mismatch", d.shape_mismatch},
            {"dtype_mismatch", d.dtype_mismatch}};
  if (d.compared) {
    j["bitwise_equal"] = d.bitwise_equal;
    j["elements"] = d.elements;
    j["not_close"] = d.not_close;
    j["nonfinite_mismatch"] = d.nonfinite_mismatch;
    j["max_abs_err"] = number_json<ordered_json>(d.max_abs);
    j["max_rel_err"] = std::isnan(d.max_rel) ? ordered_json() : number_json<ordered_json>(d.max_rel);
    j["cosine"] = std::isnan(d.cosine) ? ordered_json() : number_json<ordered_json>(d.cosine);
    j["worst_index"] = d.worst_index >= 0 ? ordered_json(d.worst_index) : ordered_json();
  }
  return j;
}

ordered_json pair_json(const ProcessComparison& p, std::size_t process, const PairResult& pair) {
  ordered_json values = ordered_json::array();
  for (const ValueResult& v : pair.values) values.push_back(value_json(v));
  return {{"process", process},
          {"base_seq", p.base[pair.base].seq},
          {"new_seq", p.other[pair.other].seq},
          {"op", p.base[pair.base].op},
          {"differs", pair.differs},
          {"origin", pair.differs ? ordered_json(pair.origin()) : ordered_json()},
          {"inputs", to_string(pair.inputs)},
          {"values_compared", pair.has_values},
          {"max_abs_err", number_json<ordered_json>(pair.max_abs)},
          {"max_rel_err", pair.rel_known() ? number_json<ordered_json>(pair.max_rel) : ordered_json()},
          {"min_cosine", pair.cosine_known() ? number_json<ordered_json>(pair.min_cosine) : ordered_json()},
          {"exception", pair.error_note.empty() ? ordered_json() : ordered_json(pair.error_note)},
          {"values", std::move(values)}};
}

ordered_json op_json(const ComparedOp& s) {
  ordered_json j = {{"op", s.op},
          {"pairs", s.pairs},
          {"differing", s.differing},
          {"origins", s.origins},
          {"max_abs_err", s.has_errors ? number_json<ordered_json>(s.max_abs) : ordered_json()},
          {"max_rel_err", s.rel_known() ? number_json<ordered_json>(s.max_rel) : ordered_json()},
          {"min_cosine", s.cosine_known() ? number_json<ordered_json>(s.min_cosine) : ordered_json()},
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

/// A call of `first_divergence` / `first_origin`: its process, both records, why they differ.
ordered_json call_json(const CompareResult& r, const std::optional<CallRef>& call) {
  if (!call) return ordered_json();
  const ProcessComparison& p = r.processes[call->process];
  const AlignStep& step = p.steps[call->step];
  ordered_json j = {{"process",
             {{"index", call->process}, {"base", name_json(p.base_name)}, {"new", name_json(p.new_name)}}},
            {"base", step.base >= 0 ? record_json(p.base[step.base]) : ordered_json()},
            {"new", step.other >= 0 ? record_json(p.other[step.other]) : ordered_json()},
            {"origin", ordered_json()},
            {"inputs", ordered_json()},
            {"reasons", ordered_json::array()}};
  if (const PairResult* pair = p.pair_at_step(call->step)) {
    j["origin"] = pair->origin();
    j["inputs"] = to_string(pair->inputs);
    j["reasons"] = pair_reasons(*pair, 16);
  }
  return j;
}

/// The seqs of a process's first divergent call or origin, or null.
ordered_json call_seqs(const std::optional<ProcessComparison::FirstCall>& call) {
  if (!call) return ordered_json();
  return {{"base_seq", call->base_seq ? ordered_json(*call->base_seq) : ordered_json()},
          {"new_seq", call->new_seq ? ordered_json(*call->new_seq) : ordered_json()}};
}

ordered_json process_json(const ProcessComparison& p) {
  const CompareCounts& c = p.counts;
  return {{"base", name_json(p.base_name)},
          {"new", name_json(p.new_name)},
          {"base_calls", p.base_calls()},
          {"new_calls", p.new_calls()},
          {"verdict", to_string(c.verdict())},
          {"identical_sequences", p.identical_sequences},
          {"pairs", c.pairs},
          {"values_compared", c.values_compared},
          {"differing_pairs", c.differing_pairs},
          {"origins", c.origins},
          {"unmatched_base", c.unmatched_base},
          {"unmatched_new", c.unmatched_new},
          {"fused_calls", p.fused_calls},
          {"kernels_without_counterpart", p.kernels_without_counterpart},
          {"first_divergence", call_seqs(p.first_divergence)},
          {"first_origin", call_seqs(p.first_origin)},
          {"calls_listed", p.detailed}};
}

}  // namespace

void write_compare_json(const CompareResult& r, std::ostream& out) {
  const CompareCounts& c = r.counts;
  ordered_json processes = ordered_json::array();
  bool identical = true;
  for (const ProcessComparison& p : r.processes) {
    processes.push_back(process_json(p));
    identical = identical && p.matched() && p.identical_sequences;
  }
  const ordered_json head = {{"base", {{"dir", r.base_dir.string()}, {"calls", r.base_calls}}},
                     {"new", {{"dir", r.new_dir.string()}, {"calls", r.new_calls}}},
                     {"rtol", r.tolerance.rtol},
                     {"atol", r.tolerance.atol},
                     {"verdict", to_string(r.verdict())},
                     {"summary", verdict_text(r)},
                     {"values_compared", c.values_compared},
                     {"identical_sequences", identical},
                     {"pairs_total", c.pairs},
                     {"differing_pairs", c.differing_pairs},
                     {"origins", c.origins},
                     {"unmatched_base", c.unmatched_base},
                     {"unmatched_new", c.unmatched_new},
                     {"uninitialized_values", c.uninitialized_values},
                     {"unmatched_processes", r.unmatched_processes},
                     {"first_divergence", call_json(r, r.first_divergence)},
                     {"first_origin", call_json(r, r.first_origin)},
                     {"processes", std::move(processes)},
                     {"warnings", r.warnings}};
  // The head without its closing brace, then the long lists streamed item by item.
  std::string text = head.dump(1, ' ', false, ordered_json::error_handler_t::replace);
  text.resize(text.find_last_of('}'));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  out << text << ",\n \"ops\": [";
  StreamedList ops(out);
  for (const ComparedOp& op : r.ops) ops.add(op_json(op));
  out << "\n ],\n \"unmatched\": [";
  StreamedList unmatched(out);
  for (std::size_t index = 0; index < r.processes.size(); ++index) {
    const ProcessComparison& p = r.processes[index];
    for (const AlignStep& step : p.steps) {
      if (step.paired()) continue;
      ordered_json item = step.base >= 0 ? record_json(p.base[step.base]) : record_json(p.other[step.other]);
      item["side"] = step.base >= 0 ? "base" : "new";
      item["process"] = index;
      unmatched.add(item);
    }
  }
  out << "\n ],\n \"pairs\": [";
  StreamedList pairs(out);
  for (std::size_t index = 0; index < r.processes.size(); ++index) {
    for (const PairResult& pair : r.processes[index].pairs) {
      pairs.add(pair_json(r.processes[index], index, pair));
    }
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
