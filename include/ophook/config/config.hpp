#pragma once
#include "ophook/export.hpp"
#include <spdlog/common.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophook::core {

enum class Mode : std::uint8_t { Trace, Stats, Dump };
enum class NanPolicy : std::uint8_t { Off, Warn, Raise };
enum class CompilePolicy : std::uint8_t { Eager, Ignore, Record };
/// How tensors are read (docs/devices.md): fake-device sends CPU tensors through the device path
/// with the statistics kernel's fake device, to test its asynchronous completion without a GPU.
enum class TensorCopy : std::uint8_t { Auto, Torch, FakeDevice };

/// Which interception levels are on (OPHOOK_LEVELS).
struct Levels {
  bool numpy = true;
  bool torch_function = true;
  bool torch_dispatch = false;
};

/// A set of non-negative integers written as "3", "0-2,10", "100-" (OPHOOK_STEPS, OPHOOK_RANKS):
/// sorted, merged, inclusive ranges; no range at all means every number.
struct RangeSet {
  static constexpr std::uint64_t kOpen = ~std::uint64_t{0};  // the end of "100-"
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;

  bool all() const noexcept { return ranges.empty(); }
  OPHOOK_API bool contains(std::uint64_t value) const noexcept;
  /// The canonical text ("0-2,10,100-"), "" for all.
  OPHOOK_API std::string to_string() const;
};

/// "3", "0-2,10", "100-" → RangeSet; nullopt when malformed (empty items, a reversed range,
/// anything but digits, '-' and ',').
OPHOOK_API std::optional<RangeSet> parse_ranges(std::string_view text);

/// The effective configuration of one process (README.md, "Configuration"). Plain data, copyable.
struct Config {
  std::string output = "np_op_dumps";
  Mode mode = Mode::Dump;
  Levels levels;
  std::string include;  // ECMAScript regex; empty = everything
  std::string exclude;  // ECMAScript regex; empty = nothing
  bool nested = false;
  RangeSet steps;        // empty: every step
  RangeSet ranks;        // empty: every rank
  std::string modules;   // ECMAScript regex over the nn.Module path; empty = every module
  bool accessors = false;
  bool imports = false;
  std::uint64_t ring_bytes = 0;  // 0 = no ring: dump mode writes every file at once
  bool ring_for_nan_hunt = false;  // ring_bytes is OPHOOK_NAN's default, not a setting
  std::string dump_include;      // ECMAScript regex; empty = every recorded op gets files
  TensorCopy tensor_copy = TensorCopy::Auto;
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

/// The ring of a NaN hunt: OPHOOK_NAN set with neither OPHOOK_MODE nor OPHOOK_RING_BYTES given.
inline constexpr std::uint64_t kNanHuntRingBytes = std::uint64_t{256} << 20;

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

OPHOOK_API std::string_view to_string(Mode mode);
OPHOOK_API std::string_view to_string(NanPolicy policy);
OPHOOK_API std::string_view to_string(CompilePolicy policy);
OPHOOK_API std::string_view to_string(TensorCopy copy);
/// "numpy,torch_function" in canonical order.
OPHOOK_API std::string levels_to_string(const Levels& levels);

/// Whether dump mode keeps its arrays in a ring (OPHOOK_RING_BYTES, or a NaN hunt's default).
OPHOOK_API bool uses_ring(const Config& config);
/// The start line's words for the ring ("" without one): its size, the triggers, and whether it is
/// a NaN hunt's default.
OPHOOK_API std::string ring_description(const Config& config);

/// The effective configuration as written into summary.json.
OPHOOK_API nlohmann::json config_to_json(const Config& config);

}  // namespace ophook::core
