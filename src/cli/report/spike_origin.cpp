#include "report/spike_origin.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace ophook::cli {

namespace {

struct Range {
  double low = 0, high = 0;
  bool sized = false;
  std::uint64_t calls = 0, nonfinite = 0;
  std::int64_t from_step = 0, to_step = 0;
};

std::optional<double> size_of(const StatsSpec& stats) {
  if (!stats.min || !stats.max) return std::nullopt;
  return std::max(std::abs(*stats.min), std::abs(*stats.max));
}

/// Each record's place: op, module and phase, and how many such calls came before it in its step.
std::vector<std::string> places(const std::vector<const TraceRecord*>& ordered) {
  std::vector<std::string> out;
  out.reserve(ordered.size());
  std::map<std::pair<std::int64_t, std::string>, std::uint64_t> seen;
  for (const TraceRecord* r : ordered) {
    std::string kind = r->op + '\n' + r->module.value_or("") + '\n' + r->phase.value_or("");
    const auto ordinal = seen[{r->step, kind}]++;
    out.push_back(kind + '\n' + std::to_string(ordinal));
  }
  return out;
}

}  // namespace

std::optional<SpikeOrigin> find_spike_origin(const std::vector<TraceRecord>& records, std::int64_t step) {
  std::vector<const TraceRecord*> ordered;
  for (const TraceRecord& r : records) {
    if (r.step <= step) ordered.push_back(&r);
  }
  std::sort(ordered.begin(), ordered.end(), [](const TraceRecord* a, const TraceRecord* b) { return a->seq < b->seq; });
  const auto keys = places(ordered);
  std::unordered_map<std::string, Range> ranges;  // place + value path → range over earlier steps
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const TraceRecord& r = *ordered[i];
    if (r.step == step) continue;
    for (const ArraySpec& array : r.arrays) {
      if (!array.is_output() || !array.stats) continue;
      Range& range = ranges[keys[i] + '\n' + array.path];
      const auto size = size_of(*array.stats);
      if (size) {
        range.low = range.sized ? std::min(range.low, *size) : *size;
        range.high = range.sized ? std::max(range.high, *size) : *size;
        range.sized = true;
      }
      range.nonfinite += array.stats->nan + array.stats->inf;
      range.from_step = range.calls == 0 ? r.step : std::min(range.from_step, r.step);
      range.to_step = std::max(range.to_step, r.step);
      ++range.calls;
    }
  }
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const TraceRecord& r = *ordered[i];
    if (r.step != step) continue;
    for (const ArraySpec& array : r.arrays) {
      if (!array.is_output() || !array.stats) continue;
      const auto it = ranges.find(keys[i] + '\n' + array.path);
      if (it == ranges.end() || it->second.calls < kSpikeHistory) continue;
      const Range& range = it->second;
      const auto size = size_of(*array.stats);
      const std::uint64_t nonfinite = array.stats->nan + array.stats->inf;
      const bool new_nonfinite = nonfinite > 0 && range.nonfinite == 0;
      const double bar = range.high + std::max(range.high - range.low, kSpikeMargin * range.high);
      const bool above = size && range.sized && *size > bar;
      if (!new_nonfinite && !above) continue;
      return SpikeOrigin{step, &r, array.path, size, nonfinite, range.low, range.high,
                         range.from_step, range.to_step, range.calls};
    }
  }
  return std::nullopt;
}

const TraceRecord* first_input_files(const std::vector<TraceRecord>& records, std::int64_t step) {
  const TraceRecord* first = nullptr;
  for (const TraceRecord& r : records) {
    if (r.step != step || (first != nullptr && r.seq >= first->seq)) continue;
    if (!r.module || r.module->empty() || r.phase.value_or("") != "forward") continue;
    const bool has_file = std::any_of(r.arrays.begin(), r.arrays.end(),
                                      [](const ArraySpec& a) { return !a.is_output() && !a.file.empty(); });
    if (has_file) first = &r;
  }
  return first;
}

}  // namespace ophook::cli
