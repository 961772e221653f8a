#pragma once
#include "ophook/export.hpp"
#include <spdlog/common.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ophook::core {

enum class Mode : std::uint8_t { Trace, Stats, Dump };
enum class NanPolicy : std::uint8_t { Off, Warn, Raise };
enum class CompilePolicy : std::uint8_t { Eager, Ignore };

/// Which interception levels are on (OPHOOK_LEVELS).
struct Levels {
  bool numpy = true;
  bool torch_function = true;
  bool torch_dispatch = false;
};

/// The effective configuration of one process (CONTRACT.md section 3). Plain data, copyable.
struct Config {
  std::string output = "np_op_dumps";
  Mode mode = Mode::Dump;
  Levels levels;
  std::string include;  // ECMAScript regex; empty = everything
  std::string exclude;  // ECMAScript regex; empty = nothing
  bool nested = false;
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  std::uint64_t queue_bytes = std::uint64_t{256} << 20;
  bool stack = true;
  NanPolicy nan = NanPolicy::Off;
  CompilePolicy compile = CompilePolicy::Eager;
  std::string overrides;
  spdlog::level::level_enum log_level = spdlog::level::info;
  bool strict = false;
  bool disable = false;
};

/// One rejected setting: names the variable, the value given and what is accepted.
struct OPHOOK_API ConfigError {
  std::string variable;  // e.g. "OPHOOK_MODE"
  std::string value;
  std::string accepted;  // e.g. "trace, stats, dump"
  /// "OPHOOK_MODE='fast' is not valid (accepted: trace, stats, dump)"
  std::string message() const;
};

struct ConfigResult {
  Config config;  // defaults wherever a value was missing or rejected
  std::vector<ConfigError> errors;
};

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

/// Why `pattern` is not a usable ECMAScript regular expression ("" when it is), e.g.
/// "missing ) (error_paren)". Never throws; never hands std::regex a pattern it mishandles.
OPHOOK_API std::string regex_problem(std::string_view pattern);

/// "4096", "64K", "256M", "1G", "2T" (binary multiples, case-insensitive suffix) → bytes.
OPHOOK_API std::optional<std::uint64_t> parse_byte_size(std::string_view text);

OPHOOK_API std::string_view to_string(Mode mode);
OPHOOK_API std::string_view to_string(NanPolicy policy);
OPHOOK_API std::string_view to_string(CompilePolicy policy);
/// "numpy,torch_function" in canonical order.
OPHOOK_API std::string levels_to_string(const Levels& levels);

/// The effective configuration as written into summary.json.
OPHOOK_API nlohmann::json config_to_json(const Config& config);

}  // namespace ophook::core
