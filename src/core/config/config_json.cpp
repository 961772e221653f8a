// The effective configuration as summary.json's "config".
#include "ophook/config/config_json.hpp"

#include <string>

namespace ophook::core {
namespace {

// A setting's text as a JSON string that can always be serialised: paths and patterns come from
// the environment as bytes, and a non-UTF-8 byte would make json::dump throw when summary.json is
// written (found by tests/fuzz/config_fuzzer.cpp). Such bytes become U+FFFD.
nlohmann::json json_text(const std::string& text) {
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted);
}

}  // namespace

nlohmann::json config_to_json(const Config& config) {
  nlohmann::json levels = nlohmann::json::array();
  if (config.levels.numpy) levels.push_back("numpy");
  if (config.levels.torch_function) levels.push_back("torch_function");
  if (config.levels.torch_dispatch) levels.push_back("torch_dispatch");
  if (config.levels.collective) levels.push_back("collective");
  nlohmann::json triggers = nlohmann::json::array();
  for (const auto& rule : config.monitor_trigger) {
    triggers.push_back({{"rule", to_string(rule)},
                        {"statistic", json_text(rule.statistic)},
                        {"kind", rule.kind == TriggerRule::Kind::Sigma ? "sigma" : "ratio"},
                        {"threshold", rule.threshold}});
  }
  return {
      {"output", json_text(config.output)},
      {"mode", to_string(config.mode)},
      {"levels", std::move(levels)},
      {"include", json_text(config.include)},
      {"exclude", json_text(config.exclude)},
      {"nested", config.nested},
      {"steps", config.steps.to_string()},
      {"ranks", config.ranks.to_string()},
      {"modules", json_text(config.modules)},
      {"accessors", config.accessors},
      {"imports", config.imports},
      {"ring_bytes", config.ring_bytes},
      {"ring_steps", config.ring_steps},
      {"dump_include", json_text(config.dump_include)},
      {"tensor_copy", to_string(config.tensor_copy)},
      {"max_bytes", config.max_bytes},
      {"queue_bytes", config.queue_bytes},
      {"stack", config.stack},
      {"nan", to_string(config.nan)},
      {"compile", to_string(config.compile)},
      {"overrides", json_text(config.overrides)},
      {"log_level", to_string(config.log_level)},
      {"monitor", monitor_to_string(config.monitor)},
      {"monitor_trigger", std::move(triggers)},
      {"monitor_window", config.monitor_window},
      {"replicas", config.replicas},
      {"strict", config.strict},
      {"disable", config.disable},
  };
}

}  // namespace ophook::core
