// Where settings come from — the process environment, or the variables the Python shim collected
// (environment and API keywords) — and which OPHOOK_ variables among them misspell a setting.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ophook/config/settings.hpp"

namespace ophook::core {
namespace {

constexpr std::string_view kPrefix = "OPHOOK_";

/// Insertions, deletions and substitutions that turn `a` into `b` (Levenshtein).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The setting whose variable the unknown OPHOOK_ `variable` most likely misspells: one it
/// extends (OPHOOK_OUTPUT_DIR), one it abbreviates (OPHOOK_RING, OPHOOK_LEVEL) or one a typo or
/// two away (OPHOOK_NANS, OPHOOK_MDOE). Names that resemble none — the variables ophook exports
/// to its child processes, a test harness's own — are left alone: only a likely typo is an error.
const SettingInfo* resembled_setting(std::string_view variable) {
  const auto name = variable.substr(kPrefix.size());
  const SettingInfo* best = nullptr;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  const auto all = settings();
  const auto tests = test_settings();
  const auto named = [&](const SettingInfo& s) { return s.name == name; };
  if (std::any_of(all.begin(), all.end(), named) || std::any_of(tests.begin(), tests.end(), named)) return nullptr;
  for (const auto& setting : all) {
    const bool extends = name.starts_with(setting.name) && name[setting.name.size()] == '_';
    const bool abbreviates = name.size() >= 3 && setting.name.starts_with(name);
    const auto distance = extends || abbreviates ? 0 : edit_distance(name, setting.name);
    const std::size_t allowed = std::min(name.size(), setting.name.size()) >= 4 ? 2 : 1;
    if (distance <= allowed && distance < best_distance) best = &setting, best_distance = distance;
  }
  return best;
}

/// Adds an error for each of `variables` (with their values) that misspells a setting's name.
template <typename Variables>
ConfigResult with_misspellings(ConfigResult result, const Variables& variables) {
  for (const auto& [variable, value] : variables) {
    if (!std::string_view(variable).starts_with(kPrefix) || std::string_view(value).empty()) continue;
    if (const auto* setting = resembled_setting(variable)) {
      result.errors.push_back({std::string(variable), std::string(value), "", setting->variable()});
    }
  }
  return result;
}

}  // namespace

ConfigResult parse_config_from_environment() {
  std::vector<std::pair<std::string_view, std::string_view>> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (const auto equals = text.find('='); text.starts_with(kPrefix) && equals != std::string_view::npos) {
      variables.emplace_back(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  return with_misspellings(parse_config([](std::string_view name) -> std::optional<std::string> {
                             const char* value = std::getenv(std::string(name).c_str());
                             if (value == nullptr) return std::nullopt;
                             return std::string(value);
                           }),
                           variables);
}

ConfigResult parse_config(const Settings& settings) {
  return with_misspellings(parse_config([&](std::string_view name) -> std::optional<std::string> {
                             if (auto it = settings.find(std::string(name)); it != settings.end()) return it->second;
                             return std::nullopt;
                           }),
                           settings);
}

}  // namespace ophook::core
