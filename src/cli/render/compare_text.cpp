#include "render/compare_text.hpp"

#include <fmt/format.h>

#include "compare/run_comparison.hpp"
#include "render/referee_verdicts.hpp"
#include "render/text_format.hpp"

namespace ophook::cli {

namespace {

constexpr std::size_t kPairsListed = 10;

/// "" for the root process, else "pid12 " / "rank1 ": the process before a BASE or NEW seq.
std::string process_prefix(const std::string& name) { return name == "root" ? "" : name + " "; }

/// "1 origin", "3 origins".
std::string origins_text(std::size_t count) {
  return fmt::format("{} origin{}", count, count == 1 ? "" : "s");
}

std::string run_calls(std::size_t calls, std::size_t processes) {
  return processes > 1 ? fmt::format("{} calls in {} processes", calls, processes)
                       : fmt::format("{} calls", calls);
}

const char* marking_explained(const PairResult& pair) {
  switch (pair.inputs) {
    case InputState::Match:
      return "origin (its array inputs match: the difference starts here)";
    case InputState::Differ:
      return "propagated (its array inputs already differ)";
    case InputState::NotRecorded:
      return "inputs not recorded (no values tell whether its array inputs matched)";
  }
  return "?";
}

void print_process_table(const CompareResult& r, std::ostream& out) {
  out << fmt::format("\nprocesses ({} pairs{}):\n", r.processes.size(),
                     r.unmatched_processes
                         ? fmt::format(", {} without counterpart", r.unmatched_processes)
                         : "");
  // Every process while they are few; past that, the ones that differ (a page whatever the
  // number of ranks: the JSON lists every process).
  const bool every = r.processes.size() <= kDetailedProcesses;
  std::vector<std::vector<std::string>> rows;
  std::size_t left_out = 0, left_out_different = 0;
  for (const ProcessComparison& p : r.processes) {
    const CompareCounts& c = p.counts;
    const bool different = p.differs();
    if (!every && (!different || rows.size() == kDetailedProcesses)) {
      ++left_out;
      left_out_different += different ? 1 : 0;
      continue;
    }
    rows.push_back({p.base_name.empty() ? "-" : p.base_name, p.new_name.empty() ? "-" : p.new_name,
                    std::to_string(p.base_calls()), std::to_string(p.new_calls()),
                    std::to_string(c.pairs), std::to_string(c.values_compared),
                    std::to_string(c.differing_pairs), std::to_string(c.origins),
                    fmt::format("{}+{}", c.unmatched_base, c.unmatched_new),
                    p.identical_sequences ? "identical" : "aligned"});
  }
  out << render_table({"BASE", "NEW", "BASE calls", "NEW calls", "pairs", "with values",
                       "differing", "origins", "unmatched", "op sequences"},
                      rows);
  if (left_out > 0) {
    out << fmt::format(
        "  and {} more process pairs, not listed: {} different, {} without a difference (--json lists "
        "every process)\n",
        left_out, left_out_different, left_out - left_out_different);
  }
}

void print_runs(const CompareResult& r, std::ostream& out) {
  std::size_t base_processes = 0, new_processes = 0;
  for (const ProcessComparison& p : r.processes) {
    base_processes += p.base_name.empty() ? 0 : 1;
    new_processes += p.new_name.empty() ? 0 : 1;
  }
  out << fmt::format("BASE  {}  ({})\n", r.base_dir.string(), run_calls(r.base_calls, base_processes));
  out << fmt::format("NEW   {}  ({})\n", r.new_dir.string(), run_calls(r.new_calls, new_processes));
  if (r.processes.size() > 1) {
    print_process_table(r, out);
    return;
  }
  const ProcessComparison& p = r.processes.front();
  if (p.identical_sequences) {
    out << fmt::format("pairing: identical op sequences, {} pairs\n", p.counts.pairs);
  } else {
    out << fmt::format(
        "pairing: op sequences differ; aligned by op name: {} pairs, {} unmatched in BASE, "
        "{} unmatched in NEW\n",
        p.counts.pairs, p.counts.unmatched_base, p.counts.unmatched_new);
  }
  if (!p.kernel_pairs.empty() || p.kernels_without_counterpart > 0) {
    out << fmt::format(
        "compiled kernels: {} paired with the eager call whose value each ends in, {} eager calls fused into "
        "them, {} kernels without an eager counterpart\n",
        p.kernel_pairs.size(), p.fused_calls, p.kernels_without_counterpart);
  }
}

/// The BASE and NEW records of a step, with why they differ.
void print_call(const CompareResult& r, const CallRef& call, std::ostream& out) {
  const ProcessComparison& p = r.processes[call.process];
  const AlignStep& step = p.steps[call.step];
  if (r.processes.size() > 1) out << "  process " << p.label() << '\n';
  out << "  BASE  "
      << (step.base >= 0 ? record_summary(p.base[step.base]) : "(no counterpart: extra call in NEW)")
      << '\n';
  out << "  NEW   "
      << (step.other >= 0 ? record_summary(p.other[step.other])
                          : "(no counterpart: extra call in BASE)")
      << '\n';
  if (const PairResult* pair = p.pair_at_step(call.step)) {
    for (const std::string& reason : pair_reasons(*pair)) out << "  why:  " << reason << '\n';
  }
}

void print_first_calls(const CompareResult& r, std::ostream& out) {
  if (!r.first_divergence) {
    out << "\nfirst divergent call: none\n";
  } else {
    out << "\nfirst divergent call:\n";
    print_call(r, *r.first_divergence, out);
    const ProcessComparison& p = r.processes[r.first_divergence->process];
    if (const PairResult* pair = p.pair_at_step(r.first_divergence->step)) {
      out << "  marked: " << marking_explained(*pair) << '\n';
    }
  }
  if (!r.first_origin) {
    if (r.counts.differing_pairs > 0) {
      out << "\nfirst origin: none (every differing call had differing or unrecorded array inputs)\n";
    }
    return;
  }
  const bool same_call = r.first_divergence && r.first_divergence->process == r.first_origin->process &&
                         r.first_divergence->step == r.first_origin->step;
  if (same_call) {
    out << "\nfirst origin: the first divergent call (its array inputs match)\n";
    return;
  }
  out << "\nfirst origin (the earliest call whose array inputs match and whose results do not):\n";
  print_call(r, *r.first_origin, out);
}

void print_op_table(const CompareResult& r, std::ostream& out) {
  out << fmt::format("\nper op (rtol={:g}, atol={:g}):\n", r.tolerance.rtol, r.tolerance.atol);
  std::vector<std::vector<std::string>> rows;
  for (const ComparedOp& s : r.ops) {
    rows.push_back({s.op, std::to_string(s.pairs), std::to_string(s.differing),
                    std::to_string(s.origins), s.has_errors ? format_error(s.max_abs) : "-",
                    s.rel_known() ? format_error(s.max_rel) : "-",
                    s.cosine_known() ? format_cosine(s.min_cosine) : "-", s.mismatch_text()});
  }
  out << render_table({"op", "pairs", "differing", "origins", "max abs err", "max rel err",
                       "min cosine", "mismatches"},
                      rows);
  if (r.counts.uninitialized_values > 0) {
    out << fmt::format(
        "  ({} values not compared: uninitialized memory in both runs, from torch.empty & co.)\n",
        r.counts.uninitialized_values);
  }
}

void print_differing(const CompareResult& r, std::ostream& out) {
  const CompareCounts& c = r.counts;
  if (c.differing_pairs == 0) return;
  out << fmt::format("\ndiffering calls ({} of {} pairs, {}{}):\n", c.differing_pairs, c.pairs,
                     origins_text(c.origins),
                     c.differing_pairs > kPairsListed ? fmt::format(", first {}", kPairsListed) : "");
  std::size_t shown = 0;
  for (const ProcessComparison& p : r.processes) {
    for (const PairResult& pair : p.pairs) {
      if (!pair.differs) continue;
      if (shown++ == kPairsListed) return;
      const TraceRecord& b = p.base[pair.base];
      const TraceRecord& n = p.other[pair.other];
      out << fmt::format("  {:<10}  BASE {}seq={} / NEW {}seq={}  {}  max abs err {}\n",
                         pair.marking(), process_prefix(p.base_name), b.seq,
                         process_prefix(p.new_name), n.seq, b.op, format_error(pair.max_abs));
      const auto reasons = pair_reasons(pair, 2);
      if (!reasons.empty()) out << "    " << reasons.front() << '\n';
    }
  }
}

void print_unmatched(const CompareResult& r, std::ostream& out) {
  const std::size_t total = r.counts.unmatched_base + r.counts.unmatched_new;
  if (total == 0) return;
  out << fmt::format("\nunmatched calls ({} in BASE, {} in NEW{}):\n", r.counts.unmatched_base,
                     r.counts.unmatched_new,
                     total > 2 * kPairsListed ? fmt::format(", first {}", 2 * kPairsListed) : "");
  std::size_t shown = 0;
  for (const ProcessComparison& p : r.processes) {
    for (const AlignStep& step : p.steps) {
      if (step.paired()) continue;
      if (shown++ == 2 * kPairsListed) return;
      if (step.base >= 0) {
        out << "  BASE only  " << process_prefix(p.base_name) << record_summary(p.base[step.base])
            << '\n';
      } else {
        out << "  NEW only   " << process_prefix(p.new_name) << record_summary(p.other[step.other])
            << '\n';
      }
    }
  }
}

}  // namespace

std::string verdict_text(const CompareResult& r) {
  const CompareCounts& c = r.counts;
  const std::string tol = fmt::format("rtol={:g}, atol={:g}", r.tolerance.rtol, r.tolerance.atol);
  const std::string processes =
      r.processes.size() > 1 ? fmt::format(", over {} process pairs", r.processes.size()) : "";
  switch (r.verdict()) {
    case Verdict::Same:
      return fmt::format(
          "SAME: all {} paired calls within tolerance ({}), {} of them with values to compare, "
          "nothing unmatched{}",
          c.pairs, tol, c.values_compared, processes);
    case Verdict::ValuesNotRecorded:
      return fmt::format(
          "SAME CALLS, VALUES NOT RECORDED: {} paired calls match, 0 of them with values to "
          "compare ({}), nothing unmatched{}",
          c.pairs,
          c.pairs > 0 ? "no .npy files or statistics: trace mode?" : "neither run recorded a call",
          processes);
    case Verdict::Different:
      break;
  }
  return fmt::format(
      "DIFFERENT: {} of {} paired calls differ ({}, {} with values to compare; {}), {} "
      "unmatched in BASE, {} unmatched in NEW{}",
      c.differing_pairs, c.pairs, origins_text(c.origins), c.values_compared, tol, c.unmatched_base,
      c.unmatched_new, processes);
}

void print_compare_text(const CompareResult& r, std::ostream& out) {
  out << verdict_text(r) << '\n';
  print_runs(r, out);
  print_first_calls(r, out);
  print_op_table(r, out);
  print_referee_text(r, out);
  print_differing(r, out);
  print_unmatched(r, out);
  out << "\nverdict: " << verdict_text(r) << '\n';
}

}  // namespace ophook::cli
