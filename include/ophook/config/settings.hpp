#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/config/config.hpp"
#include "ophook/export.hpp"

/// The OPHOOK_* settings and their parsing (README.md, "Configuration"): one table of rows, the
/// single source of the variables, the `ophook run` options, the Python keywords, --help and the
/// README's configuration table; values checked as they are read, a misspelled variable named.
namespace ophook::core {

/// "3", "0-2,10", "100-" → RangeSet; nullopt when malformed (empty items, a reversed range,
/// anything but digits, '-' and ',').
OPHOOK_API std::optional<RangeSet> parse_ranges(std::string_view text);

/// "loss:6sigma,grad_norm:10x" → rules; nullopt when malformed or when a statistic is not one that
/// monitor_statistics() names.
OPHOOK_API std::optional<std::vector<TriggerRule>> parse_trigger_rules(std::string_view text);

/// The statistics a trigger rule may watch: the step's ("loss", "grad_norm") and, after a
/// parameter's or a module's path, each of theirs ("grad_norm", "act_norm", ...).
struct MonitorStatistics {
  std::span<const std::string_view> step;
  std::span<const std::string_view> parameter;
  std::span<const std::string_view> module;
};
OPHOOK_API MonitorStatistics monitor_statistics();

/// One rejected setting: names the variable, the value given and what is accepted.
struct OPHOOK_API ConfigError {
  std::string variable;  // e.g. "OPHOOK_MODE"
  std::string value;
  std::string accepted;  // e.g. "trace, stats, dump"
  /// A variable that is no setting but resembles one (OPHOOK_OUTPUT_DIR): that setting's variable.
  std::string resembles;
  /// "OPHOOK_MODE='fast' is not valid (accepted: trace, stats, dump)", or for a misspelled name
  /// "OPHOOK_OUTPUT_DIR='runs' is not an ophook setting (did you mean OPHOOK_OUTPUT?)"
  std::string message() const;
};

struct ConfigResult {
  Config config;  // defaults wherever a value was missing or rejected
  std::vector<ConfigError> errors;
};

class SettingParser;

/// One OPHOOK_* setting. The table of them (settings()) is the single source of the variables,
/// the `ophook run` options, the Python keywords, --help and the README's configuration table.
struct OPHOOK_API SettingInfo {
  std::string_view name;          // "RING_BYTES": OPHOOK_RING_BYTES, --ring-bytes, ring_bytes=
  std::string_view metavar;       // "N", for --help
  std::string_view values;        // what is accepted, in words
  std::string_view default_text;  // the default, in words
  std::string_view help;          // one line: what it does
  void (*parse)(SettingParser& parser, Config& config);

  std::string variable() const;  // "OPHOOK_RING_BYTES"
  std::string option() const;    // "--ring-bytes"
  std::string keyword() const;   // "ring_bytes"
};

/// Every setting, in the order of README.md's configuration table. Thread-safe (constant).
OPHOOK_API std::span<const SettingInfo> settings();

/// The OPHOOK_TEST_* settings (Config::test): parsed like the others, shown nowhere.
OPHOOK_API std::span<const SettingInfo> test_settings();

/// Looks up one variable by its full name ("OPHOOK_MODE"); nullopt when unset.
using SettingLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// Parses every OPHOOK_* setting through `lookup`. Never throws; bad values become errors.
/// An empty string counts as unset. Thread-safe (pure).
OPHOOK_API ConfigResult parse_config(const SettingLookup& lookup);

/// parse_config over the process environment (getenv).
OPHOOK_API ConfigResult parse_config_from_environment();

/// Full variable names to values, as the Python shim collects them (environment and API keywords).
using Settings = std::map<std::string, std::string>;

/// parse_config over `settings`.
OPHOOK_API ConfigResult parse_config(const Settings& settings);

/// Why `value` is not accepted for `setting` alone ("" when it is): the message of its ConfigError.
OPHOOK_API std::string setting_problem(const SettingInfo& setting, std::string_view value);

/// Why `pattern` is not a usable ECMAScript regular expression ("" when it is), e.g.
/// "missing ) (error_paren)". Never throws; never hands std::regex a pattern it mishandles.
OPHOOK_API std::string regex_problem(std::string_view pattern);

/// "4096", "64K", "256M", "1G", "2T" (binary multiples, case-insensitive suffix) → bytes.
OPHOOK_API std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace ophook::core
