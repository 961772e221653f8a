#include "render/rank_chain_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace ophook::cli {

std::string rank_ranges(const std::vector<std::int64_t>& sorted, std::size_t most_ranges) {
  std::string text;
  std::size_t ranges = 0;
  for (std::size_t i = 0; i < sorted.size(); ++ranges) {
    if (ranges == most_ranges) return text + ",…";
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    text += (text.empty() ? "rank" : ",") + std::to_string(sorted[i]);
    if (j > i) text += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return text;
}

std::string rank_list(const RunReport& report, const std::vector<std::size_t>& processes) {
  std::vector<std::int64_t> numbers;
  std::vector<std::string> others;
  for (const std::size_t p : processes) {
    const ProcessRun& process = report.processes[p];
    if (process.rank) {
      numbers.push_back(*process.rank);
    } else {
      others.push_back(process.label);
    }
  }
  std::sort(numbers.begin(), numbers.end());
  std::string text = rank_ranges(numbers);
  for (const auto& other : others) text += (text.empty() ? "" : ",") + other;
  return text;
}

std::vector<std::string> describe_rank_chain(const RunReport& report, const std::vector<RankNonfinite>& ranks,
                                             std::size_t limit) {
  if (report.processes.size() < 2 || ranks.empty()) return {};
  std::vector<std::string> lines;
  const auto first = causal_first(ranks);
  auto after_text = [](const RankNonfinite& rank) {
    std::string text;
    for (const auto& [group, count] : rank.after_collective) {
      if (count == 0) continue;
      text += fmt::format("{}after collective #{} of group {}", text.empty() ? ", " : "; ", count, group);
    }
    return text;
  };
  if (first) {
    const auto& born = ranks[*first];
    lines.push_back(fmt::format("{}: made it, seq {} {} at {} (step {}){}", report.processes[born.process].label,
                                born.seq, born.op, born.source, born.step, after_text(born)));
  } else {
    lines.emplace_back("no rank made it: every rank's first NaN/Inf was received (its culprit's rank wrote no record)");
  }
  // The collectives that carried it, each with the ranks it reached there, earliest first.
  std::map<std::tuple<std::int64_t, std::string, std::int64_t, std::string>, std::vector<std::size_t>> carried;
  std::vector<std::size_t> also_made;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto& rank = ranks[i];
    if (rank.received) {
      carried[{rank.step, rank.group, rank.group_seq, rank.op}].push_back(rank.process);
    } else if (!first || i != *first) {
      also_made.push_back(i);
    }
  }
  std::size_t left = 0;
  for (const auto& [key, processes] : carried) {
    const auto& [step, group, group_seq, op] = key;
    if (lines.size() + 1 >= limit) {
      left += processes.size();
      continue;
    }
    lines.push_back(fmt::format("received by {} at {} #{} of group {} (step {})", rank_list(report, processes), op,
                                group_seq, group, step));
  }
  for (const std::size_t i : also_made) {
    const auto& rank = ranks[i];
    if (lines.size() + 1 >= limit) {
      ++left;
      continue;
    }
    const bool after = first && causally_before(ranks[*first], rank);
    lines.push_back(fmt::format("{}: made one too, seq {} {} at {} (step {}){}{}", report.processes[rank.process].label,
                                rank.seq, rank.op, rank.source, rank.step, after_text(rank),
                                after ? ", after the first" : ", concurrent with the first by the collectives"));
  }
  if (left > 0) lines.push_back(fmt::format("… and {} more ranks", left));
  return lines;
}

}  // namespace ophook::cli
