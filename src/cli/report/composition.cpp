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

/// "0-2, 10" from the set of steps seen.
std::string steps_text(const std::vector<std::int64_t>& steps) {
  std::string text;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") +
            (i == j ? std::to_string(steps[i]) : fmt::format("{}-{}", steps[i], steps[j]));
    i = j + 1;
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> composition_facts(const RunReport& report,
                                                                   std::size_t top_modules) {
  Counts levels, phases, modules;
  std::vector<std::int64_t> steps;
  for (const ProcessRun& process : report.processes) {
    for (const TraceRecord& r : process.records) {
      ++levels[r.level];
      if (r.phase) ++phases[*r.phase];
      if (r.module) ++modules[*r.module];
      steps.push_back(r.step);
    }
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return {{"levels", counts_text(levels, levels.size())},
          {"phases", counts_text(phases, phases.size())},
          {"steps", steps_text(steps)},
          {"top modules", counts_text(modules, top_modules)}};
}

}  // namespace ophook::cli
