#pragma once
// The value parsers that the settings table (settings_table.cpp) applies to each OPHOOK_* variable.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/config/settings.hpp"

namespace ophook::core {

/// A keyword's accepted spelling (lower case) and its value.
template <typename T>
struct Choice {
  std::string_view name;
  T value;
};

std::string lower(std::string_view s);
std::string_view trim(std::string_view s);

/// "a, b, c" for --help and error messages.
template <typename T, std::size_t N>
std::string accepted_list(const Choice<T> (&choices)[N]) {
  std::string out;
  for (const auto& c : choices) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

/// Fills a Config from one lookup, collecting an error for each rejected value; a rejected value
/// leaves the default in place. Keywords are matched case-insensitively after trimming blanks, so
/// "Dump " is as good as "dump". An empty string counts as unset. Not thread-safe (one per parse).
class SettingParser {
 public:
  explicit SettingParser(const SettingLookup& lookup) : lookup_(lookup) {}

  /// The value of `variable`, or nullopt when unset or empty.
  std::optional<std::string> get(std::string_view variable) const;
  bool given(std::string_view variable) const { return get(variable).has_value(); }
  void reject(std::string_view variable, std::string value, std::string accepted);

  /// One of `choices`; a rejected value is answered with `accepted` (default: the choices listed).
  template <typename T, std::size_t N>
  void keyword(std::string_view variable, T& field, const Choice<T> (&choices)[N], std::string_view accepted = {}) {
    const auto value = get(variable);
    if (!value) return;
    const std::string key = lower(trim(*value));
    for (const auto& c : choices) {
      if (key == c.name) {
        field = c.value;
        return;
      }
    }
    reject(variable, *value, accepted.empty() ? accepted_list(choices) : std::string(accepted));
  }

  void text(std::string_view variable, std::string& field);
  void boolean(std::string_view variable, bool& field);
  void regex(std::string_view variable, std::string& field);
  void byte_size(std::string_view variable, std::uint64_t& field, std::uint64_t minimum, std::string_view accepted);
  void levels(std::string_view variable, Levels& field);
  void ranges(std::string_view variable, RangeSet& field);
  /// OPHOOK_MONITOR's list: params, modules (a boolean's on: params).
  void monitor_set(std::string_view variable, MonitorSet& field);
  /// OPHOOK_MONITOR_TRIGGER's rules (parse_trigger_rules).
  void trigger_rules(std::string_view variable, std::vector<TriggerRule>& field);
  /// A whole number in [minimum, maximum].
  void count(std::string_view variable, std::uint64_t& field, std::uint64_t minimum, std::uint64_t maximum);

  ConfigResult& result() { return result_; }

 private:
  const SettingLookup& lookup_;
  ConfigResult result_;
};

}  // namespace ophook::core
