#include "compare_text.hpp"

#include <fmt/format.h>

#include "compare_referee.hpp"
#include "text_format.hpp"

namespace ophook::cli {

namespace {

constexpr std::size_t kListed = 10;

void print_runs(const CompareResult& r, std::ostream& out) {
  out << fmt::format("BASE  {}  ({} calls)\n", r.base_dir.string(), r.base.size());
  out << fmt::format("NEW   {}  ({} calls)\n", r.new_dir.string(), r.other.size());
  if (r.identical_sequences) {
    out << fmt::format("pairing: identical op sequences, {} pairs\n", r.pairs.size());
  } else {
    out << fmt::format(
        "pairing: op sequences differ; aligned by op name: {} pairs, {} unmatched in BASE, "
        "{} unmatched in NEW\n",
        r.pairs.size(), r.unmatched_base, r.unmatched_new);
  }
}

void print_first_divergence(const CompareResult& r, std::ostream& out) {
  if (!r.first_divergent_step) {
    out << "\nfirst divergent call: none\n";
    return;
  }
  const AlignStep& step = r.steps[*r.first_divergent_step];
  out << "\nfirst divergent call:\n";
  out << "  BASE  "
      << (step.base >= 0 ? record_summary(r.base[step.base])
                         : "(no counterpart: extra call in NEW)")
      << '\n';
  out << "  NEW   "
      << (step.other >= 0 ? record_summary(r.other[step.other])
                          : "(no counterpart: extra call in BASE)")
      << '\n';
  if (const PairResult* pair = r.pair_at_step(*r.first_divergent_step)) {
    for (const std::string& reason : pair_reasons(*pair)) out << "  why:  " << reason << '\n';
  }
}

void print_op_table(const CompareResult& r, std::ostream& out) {
  out << fmt::format("\nper op (rtol={:g}, atol={:g}):\n", r.tolerance.rtol, r.tolerance.atol);
  std::vector<std::vector<std::string>> rows;
  for (const OpSummary& s : r.ops) {
    rows.push_back({s.op, std::to_string(s.pairs), std::to_string(s.differing),
                    s.has_errors ? format_error(s.max_abs) : "-",
                    s.rel_known() ? format_error(s.max_rel) : "-",
                    s.cosine_known() ? format_cosine(s.min_cosine) : "-", s.mismatch_text()});
  }
  out << render_table(
      {"op", "pairs", "differing", "max abs err", "max rel err", "min cosine", "mismatches"}, rows);
  if (r.uninitialized_values > 0) {
    out << fmt::format(
        "  ({} values not compared: uninitialized memory in both runs, from torch.empty & co.)\n",
        r.uninitialized_values);
  }
}

void print_differing(const CompareResult& r, std::ostream& out) {
  if (r.differing_pairs == 0) return;
  out << fmt::format("\ndiffering calls ({} of {} pairs{}):\n", r.differing_pairs, r.pairs.size(),
                     r.differing_pairs > kListed ? fmt::format(", first {}", kListed) : "");
  std::size_t shown = 0;
  for (const PairResult& pair : r.pairs) {
    if (!pair.differs) continue;
    if (shown++ == kListed) break;
    const TraceRecord& b = r.base[pair.base];
    const TraceRecord& n = r.other[pair.other];
    out << fmt::format("  BASE seq={} / NEW seq={}  {}  max abs err {}\n", b.seq, n.seq, b.op,
                       format_error(pair.max_abs));
    const auto reasons = pair_reasons(pair, 2);
    if (!reasons.empty()) out << "    " << reasons.front() << '\n';
  }
}

void print_unmatched(const CompareResult& r, std::ostream& out) {
  const std::size_t total = r.unmatched_base + r.unmatched_new;
  if (total == 0) return;
  out << fmt::format("\nunmatched calls ({} in BASE, {} in NEW{}):\n", r.unmatched_base,
                     r.unmatched_new,
                     total > 2 * kListed ? fmt::format(", first {}", 2 * kListed) : "");
  std::size_t shown = 0;
  for (const AlignStep& step : r.steps) {
    if (step.paired()) continue;
    if (shown++ == 2 * kListed) break;
    if (step.base >= 0) {
      out << "  BASE only  " << record_summary(r.base[step.base]) << '\n';
    } else {
      out << "  NEW only   " << record_summary(r.other[step.other]) << '\n';
    }
  }
}

}  // namespace

std::string verdict_text(const CompareResult& r) {
  const std::string tol = fmt::format("rtol={:g}, atol={:g}", r.tolerance.rtol, r.tolerance.atol);
  if (r.same()) {
    return fmt::format("SAME: all {} paired calls within tolerance ({}), nothing unmatched",
                       r.pairs.size(), tol);
  }
  return fmt::format(
      "DIFFERENT: {} of {} paired calls differ ({}), {} unmatched in BASE, {} "
      "unmatched in NEW",
      r.differing_pairs, r.pairs.size(), tol, r.unmatched_base, r.unmatched_new);
}

void print_compare_text(const CompareResult& r, std::ostream& out) {
  print_runs(r, out);
  print_first_divergence(r, out);
  print_op_table(r, out);
  print_referee_text(r, out);
  print_differing(r, out);
  print_unmatched(r, out);
  out << "\nverdict: " << verdict_text(r) << '\n';
}

}  // namespace ophook::cli
