#include "read/monitor_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <unordered_map>

#include "ophook/error.hpp"
#include "read/json_fields.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Widens the ranges of `section`'s `statistic` ({"params": {name: {stat: value}}}) by one line.
void widen_ranges(const json& line, const char* section, const char* statistic, std::int64_t step,
                  std::unordered_map<std::string, std::size_t>& index, std::vector<SeriesRange>& ranges) {
  const auto entries = line.find(section);
  if (entries == line.end() || !entries->is_object()) return;
  for (const auto& [name, stats] : entries->items()) {
    if (!stats.is_object()) continue;
    const auto value = stats.find(statistic);
    if (value == stats.end() || !value->is_number()) continue;
    const double v = value->get<double>();
    const std::string key = name + "." + statistic;
    auto [it, fresh] = index.emplace(key, ranges.size());
    if (fresh) {
      ranges.push_back({key, v, v, step});
      continue;
    }
    SeriesRange& range = ranges[it->second];
    range.low = std::min(range.low, v);
    if (v > range.high) range.high = v, range.high_step = step;
  }
}

}  // namespace

MonitorLog read_monitor_file(const fs::path& dir, std::vector<std::string>& warnings) {
  MonitorLog log;
  const fs::path path = dir / "monitor.jsonl";
  std::ifstream in(path, std::ios::binary);
  if (!in) return log;
  log.present = true;
  std::string line, bad;
  std::size_t number = 0, bad_number = 0;
  std::unordered_map<std::string, std::size_t> range_index;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (!bad.empty()) throw Error(fmt::format("{}:{}: not a JSON object", path.string(), bad_number));
    json parsed = json::parse(line, nullptr, false);
    if (!parsed.is_object()) {
      bad = line, bad_number = number;
      continue;
    }
    const std::string where = fmt::format("{}:{}", path.string(), number);
    const auto step = optional_integer(parsed, "step", where);
    if (!step) throw Error(where + ": no step");
    ++log.steps;
    log.points.push_back({*step, optional_number(parsed, "loss", where), optional_number(parsed, "grad_norm", where)});
    if (!log.first_step) log.first_step = step;
    log.last_step = step;
    widen_ranges(parsed, "modules", "act_norm", *step, range_index, log.ranges);
    widen_ranges(parsed, "params", "grad_norm", *step, range_index, log.ranges);
    const auto triggers = parsed.find("triggers");
    if (triggers == parsed.end() || !triggers->is_array()) continue;
    for (auto& trigger : *triggers) log.triggers.push_back({*step, std::move(trigger)});
  }
  if (!bad.empty()) {
    warnings.push_back(fmt::format("{}:{}: the last line is cut short (the run ended while writing it): left out",
                                   path.string(), bad_number));
  }
  return log;
}

std::string describe_trigger(const MonitorTrigger& trigger) {
  const json& t = trigger.facts;
  const std::string statistic = t.value("statistic", "?"), rule = t.value("rule", "?");
  const json value = t.value("value", json());
  if (!value.is_number()) return fmt::format("{} is not finite ({})", statistic, rule);
  const auto steps = t.value("steps", 0);
  if (t.contains("sigmas")) {
    return fmt::format("{} {:.4g} is {:.1f} sigma above the mean of the {} steps before ({:.4g}, sigma {:.3g}) ({})",
                       statistic, value.get<double>(), t.value("sigmas", 0.0), steps, t.value("mean", 0.0),
                       t.value("std", 0.0), rule);
  }
  return fmt::format("{} {:.4g} is {:.1f} times the median of the {} steps before ({:.4g}) ({})", statistic,
                     value.get<double>(), t.value("times", 0.0), steps, t.value("median", 0.0), rule);
}

}  // namespace ophook::cli
