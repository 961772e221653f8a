// Parsing of the OPHOOK_* settings (README.md, "Configuration"): every row of the settings table
// applied to one lookup, and the rules that tie settings together.
#include <string>
#include <utility>

#include "config/setting_parser.hpp"
#include "ophook/config/settings.hpp"

namespace ophook::core {

std::string ConfigError::message() const {
  if (!resembles.empty()) return variable + "='" + value + "' is not an ophook setting (did you mean " + resembles + "?)";
  return variable + "='" + value + "' is not valid (accepted: " + accepted + ")";
}

ConfigResult parse_config(const SettingLookup& lookup) {
  SettingParser p(lookup);
  Config& c = p.result().config;
  for (const auto& setting : settings()) setting.parse(p, c);
  for (const auto& setting : test_settings()) setting.parse(p, c);
  // A NaN hunt keeps its arrays in memory until the culprit shows up (docs/outputs.md, "The ring").
  if (c.nan != NanPolicy::Off && !p.given("OPHOOK_MODE") && !p.given("OPHOOK_RING_BYTES")) {
    c.ring_bytes = kNanHuntRingBytes;
    c.ring_for_nan_hunt = true;
  }
  if (c.ring_steps > 0 && !p.given("OPHOOK_RING_BYTES")) c.ring_bytes = kNanHuntRingBytes;
  const bool ring_given = p.given("OPHOOK_RING_BYTES") || p.given("OPHOOK_RING_STEPS");
  // Trigger rules watch the monitor's statistics: they turn it on (docs/monitor.md).
  if (!c.monitor_trigger.empty() && !p.given("OPHOOK_MONITOR")) c.monitor.params = true;
  // The monitor or the replica check left on alone costs its once-per-step work only.
  if ((c.monitor.on() || c.replicas > 0) && !p.given("OPHOOK_MODE") && c.nan == NanPolicy::Off && !ring_given) {
    c.records_ops = false;
    // Nothing is recorded, so torch.compile'd code has no reason to run eagerly: it runs compiled.
    if (!p.given("OPHOOK_COMPILE")) c.compile = CompilePolicy::Ignore;
  }
  return std::move(p.result());
}

std::string setting_problem(const SettingInfo& setting, std::string_view value) {
  const auto variable = setting.variable();
  const auto result = parse_config([&](std::string_view name) -> std::optional<std::string> {
    if (name == variable) return std::string(value);
    return std::nullopt;
  });
  return result.errors.empty() ? "" : result.errors.front().message();
}

}  // namespace ophook::core
