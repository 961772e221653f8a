// OPHOOK_MONITOR and OPHOOK_MONITOR_TRIGGER: what the training monitor watches and the rules that
// fire on a spike, checked at start so that a misspelled statistic fails before the first step.
#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#include "config/setting_parser.hpp"
#include "ophook/config/settings.hpp"

namespace ophook::core {
namespace {

constexpr std::string_view kStepStatistics[] = {"loss", "grad_norm"};
constexpr std::string_view kParameterStatistics[] = {"norm",     "grad_norm", "update_ratio", "min",
                                                     "max",      "grad_min",  "grad_max",     "nan",
                                                     "inf",      "grad_nan",  "grad_inf",     "lr"};
constexpr std::string_view kModuleStatistics[] = {"act_norm", "act_min", "act_max", "act_nonfinite",
                                                  "act_grad_norm"};
constexpr std::string_view kMonitorAccepted = "a comma-separated list of params, modules (1 or on: params)";
constexpr std::string_view kUnits[] = {"sigma", "x"};

bool listed(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool known_statistic(std::string_view name) {
  if (listed(kStepStatistics, name)) return true;
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  const auto stat = name.substr(dot + 1);
  return listed(kParameterStatistics, stat) || listed(kModuleStatistics, stat);
}

std::string joined(std::span<const std::string_view> names) {
  std::string out;
  for (const auto name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::optional<TriggerRule> parse_rule(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  TriggerRule rule;
  rule.statistic = std::string(trim(text.substr(0, colon)));
  std::string_view amount = trim(text.substr(colon + 1));
  if (!known_statistic(rule.statistic)) return std::nullopt;
  if (amount.ends_with(kUnits[0])) {
    rule.kind = TriggerRule::Kind::Sigma;
    amount.remove_suffix(kUnits[0].size());
  } else if (amount.ends_with(kUnits[1])) {
    rule.kind = TriggerRule::Kind::Ratio;
    amount.remove_suffix(kUnits[1].size());
  } else {
    return std::nullopt;
  }
  const auto* end = amount.data() + amount.size();
  const auto [at, error] = std::from_chars(amount.data(), end, rule.threshold);
  if (amount.empty() || error != std::errc() || at != end || !(rule.threshold > 0)) return std::nullopt;
  return rule;
}

}  // namespace

MonitorStatistics monitor_statistics() { return {kStepStatistics, kParameterStatistics, kModuleStatistics}; }

std::optional<std::vector<TriggerRule>> parse_trigger_rules(std::string_view text) {
  std::vector<TriggerRule> rules;
  while (true) {
    const std::size_t comma = text.find(',');
    const auto item = trim(text.substr(0, comma));
    if (!item.empty()) {
      auto rule = parse_rule(item);
      if (!rule) return std::nullopt;
      rules.push_back(std::move(*rule));
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (rules.empty()) return std::nullopt;
  return rules;
}

std::string monitor_to_string(const MonitorSet& monitor) {
  if (monitor.modules) return "params,modules";
  return monitor.params ? "params" : "";
}

std::string to_string(const TriggerRule& rule) {
  std::string amount = std::to_string(rule.threshold);
  amount.erase(amount.find_last_not_of('0') + 1);  // "6.000000" → "6"
  if (amount.ends_with('.')) amount.pop_back();
  return rule.statistic + ":" + amount + std::string(kUnits[rule.kind == TriggerRule::Kind::Sigma ? 0 : 1]);
}

void SettingParser::monitor_set(std::string_view variable, MonitorSet& field) {
  const auto value = get(variable);
  if (!value) return;
  const std::string whole = lower(trim(*value));
  if (whole == "0" || whole == "off" || whole == "false" || whole == "no") return;
  if (whole == "1" || whole == "on" || whole == "true" || whole == "yes") {
    field.params = true;
    return;
  }
  MonitorSet parsed;
  std::string_view rest = whole;
  while (true) {
    const std::size_t comma = rest.find(',');
    const auto item = trim(rest.substr(0, comma));
    if (item == "params") {
      parsed.params = true;
    } else if (item == "modules") {
      parsed.params = parsed.modules = true;  // module statistics come per optimizer step too
    } else if (!item.empty()) {
      reject(variable, *value, std::string(kMonitorAccepted));
      return;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (!parsed.on()) {
    reject(variable, *value, std::string(kMonitorAccepted));
    return;
  }
  field = parsed;
}

void SettingParser::trigger_rules(std::string_view variable, std::vector<TriggerRule>& field) {
  const auto value = get(variable);
  if (!value) return;
  if (auto parsed = parse_trigger_rules(*value)) {
    field = std::move(*parsed);
    return;
  }
  reject(variable, *value,
         "comma-separated rules STATISTIC:Nsigma (N standard deviations above the window's mean) or "
         "STATISTIC:Nx (N times the window's median), STATISTIC one of " + joined(kStepStatistics) +
             ", or a parameter's path followed by ." + joined(kParameterStatistics) + " (e.g. fc1.weight.grad_norm, "
             "'*' for any path), or a module's path followed by ." + joined(kModuleStatistics));
}

}  // namespace ophook::core
