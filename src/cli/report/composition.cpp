#include "report/composition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ophook::cli {
namespace {

using Counts = std::map<std::string, std::uint64_t>;

/// "torch_dispatch 340, torch_function 120" (most first), at most `limit` entries.
std::string counts_text(const Counts& counts, std::size_t limit) {
  std::vector<std::pair<std::string, std::uint64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string text;
  for (std::size_t i = 0; i < std::min(limit, sorted.size()); ++i) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", sorted[i].first, sorted[i].second);
  }
  if (sorted.size() > limit) text += fmt::format(", … ({} in all)", sorted.size());
  return text.empty() ? "-" : text;
}

/// "0-2, 10" from the ranges of steps seen.
std::string steps_text(const std::vector<std::pair<std::int64_t, std::int64_t>>& steps) {
  std::string text;
  for (const auto& [first, last] : steps) {
    text += (text.empty() ? "" : ", ") + (first == last ? std::to_string(first) : fmt::format("{}-{}", first, last));
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> composition_facts(const RunReport& report,
                                                                   std::size_t top_modules) {
  const CallCounts& counts = report.counts;
  Counts phases = counts.phases;
  phases.erase("none");  // calls outside forward and backward
  return {{"levels", counts_text(counts.levels, counts.levels.size())},
          {"phases", counts_text(phases, phases.size())},
          {"steps", steps_text(counts.steps)},
          {"top modules", counts_text(counts.modules, top_modules)}};
}

}  // namespace ophook::cli
