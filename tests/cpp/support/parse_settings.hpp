#pragma once
// The settings parser fed from a map instead of the process environment, for the config tests.
#include "ophook/config/settings.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ophook::test {

using SettingsMap = std::map<std::string, std::string, std::less<>>;

inline core::ConfigResult parse_settings(const SettingsMap& env) {
  return core::parse_config([&env](std::string_view name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

}  // namespace ophook::test
