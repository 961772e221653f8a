// Parsing of the OPHOOK_* environment (README.md, "Configuration").
#include "ophook/config/config.hpp"

#include <cctype>
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <regex>
#include <unistd.h>
#include <utility>
#include <vector>

#include "config/setting_parser.hpp"

namespace ophook::core {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

constexpr Choice<bool> kBooleans[] = {{"0", false},   {"1", true},   {"false", false}, {"true", true},
                                      {"no", false},  {"yes", true}, {"off", false},   {"on", true}};
constexpr std::string_view kLevelsAccepted = "a non-empty comma-separated list of numpy, torch_function, torch_dispatch";

// libstdc++ 12 reads the number of a back-reference (\N) or of a {n,m} count into a long without
// an overflow check: 20 digits are undefined behaviour inside std::regex (found by fuzz_config).
// True when such a number has more digits than any real pattern needs.
bool has_oversized_regex_number(std::string_view pattern) {
  constexpr std::size_t kMaxDigits = 9;
  bool escaped = false, in_braces = false;
  std::size_t run = 0;  // digits so far of a number std::regex will read
  for (const char c : pattern) {
    const bool digit = c >= '0' && c <= '9';
    if (run > 0 && digit) {
      if (++run > kMaxDigits) return true;
      continue;
    }
    run = 0;
    if (escaped) {
      escaped = false;
      run = digit ? 1 : 0;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '{' || c == '}') {
      in_braces = c == '{';
    } else if (in_braces && digit) {
      run = 1;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> SettingParser::get(std::string_view variable) const {
  std::optional<std::string> value = lookup_(variable);
  if (value && value->empty()) return std::nullopt;
  return value;
}

void SettingParser::reject(std::string_view variable, std::string value, std::string accepted) {
  result_.errors.push_back({std::string(variable), std::move(value), std::move(accepted), {}});
}

void SettingParser::text(std::string_view variable, std::string& field) {
  if (auto value = get(variable)) field = std::move(*value);
}

void SettingParser::boolean(std::string_view variable, bool& field) {
  const auto value = get(variable);
  if (!value) return;
  const std::string key = lower(trim(*value));
  for (const auto& c : kBooleans) {
    if (key == c.name) {
      field = c.value;
      return;
    }
  }
  reject(variable, *value, "0, 1 (also false/true, no/yes, off/on)");
}

void SettingParser::regex(std::string_view variable, std::string& field) {
  const auto value = get(variable);
  if (!value) return;
  if (const auto problem = regex_problem(*value); !problem.empty()) {
    reject(variable, *value, "an ECMAScript regular expression (" + problem + ")");
  } else {
    field = *value;
  }
}

void SettingParser::byte_size(std::string_view variable, std::uint64_t& field, std::uint64_t minimum,
                              std::string_view accepted) {
  const auto value = get(variable);
  if (!value) return;
  const auto parsed = parse_byte_size(*value);
  if (parsed && *parsed >= minimum) {
    field = *parsed;
  } else {
    reject(variable, *value, std::string(accepted));
  }
}

void SettingParser::levels(std::string_view variable, Levels& field) {
  const auto value = get(variable);
  if (!value) return;
  Levels parsed{false, false, false};
  bool any = false;
  std::string_view rest = *value;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string item = lower(trim(rest.substr(0, comma)));
    if (item == "numpy") {
      parsed.numpy = any = true;
    } else if (item == "torch_function") {
      parsed.torch_function = any = true;
    } else if (item == "torch_dispatch") {
      parsed.torch_dispatch = any = true;
    } else if (!item.empty()) {
      any = false;  // an unknown level rejects the whole list
      break;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (any) {
    field = parsed;
  } else {
    reject(variable, *value, std::string(kLevelsAccepted));
  }
}

void SettingParser::ranges(std::string_view variable, RangeSet& field) {
  const auto value = get(variable);
  if (!value) return;
  if (auto parsed = parse_ranges(*value)) {
    field = std::move(*parsed);
  } else {
    reject(variable, *value, "comma-separated numbers and ranges, e.g. 3 or 0-2,10 or 100-");
  }
}

std::string ConfigError::message() const {
  if (!resembles.empty()) return variable + "='" + value + "' is not an ophook setting (did you mean " + resembles + "?)";
  return variable + "='" + value + "' is not valid (accepted: " + accepted + ")";
}

std::string regex_problem(std::string_view pattern) {
  if (has_oversized_regex_number(pattern)) return "a back-reference or repeat count of more than 9 digits";
  try {
    const std::regex compiled(pattern.begin(), pattern.end(), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return "";
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  text = trim(text);
  std::uint64_t number = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (number > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    number = number * 10 + digit;
  }
  if (i == 0) return std::nullopt;  // empty, a sign, or no digits at all
  const std::string suffix = lower(trim(text.substr(i)));
  unsigned shift = 0;
  std::string_view unit = suffix;
  if (!unit.empty()) {
    switch (unit.front()) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: break;
    }
    if (shift != 0) unit.remove_prefix(1);
  }
  // "64K", "64KB", "64KiB" and "4096B" all mean the same thing.
  if (!(unit.empty() || unit == "b" || (shift != 0 && unit == "ib"))) return std::nullopt;
  if (shift != 0 && number > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    return std::nullopt;
  }
  return number << shift;
}

ConfigResult parse_config(const SettingLookup& lookup) {
  SettingParser p(lookup);
  Config& c = p.result().config;
  for (const auto& setting : settings()) setting.parse(p, c);
  // A NaN hunt keeps its arrays in memory until the culprit shows up (docs/outputs.md, "The ring").
  if (c.nan != NanPolicy::Off && !p.given("OPHOOK_MODE") && !p.given("OPHOOK_RING_BYTES")) {
    c.ring_bytes = kNanHuntRingBytes;
    c.ring_for_nan_hunt = true;
  }
  return std::move(p.result());
}

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
  if (std::any_of(all.begin(), all.end(), [&](const SettingInfo& s) { return s.name == name; })) return nullptr;
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

std::string setting_problem(const SettingInfo& setting, std::string_view value) {
  const auto variable = setting.variable();
  const auto result = parse_config([&](std::string_view name) -> std::optional<std::string> {
    if (name == variable) return std::string(value);
    return std::nullopt;
  });
  return result.errors.empty() ? "" : result.errors.front().message();
}

bool uses_ring(const Config& config) { return config.mode == Mode::Dump && config.ring_bytes > 0; }

std::string ring_description(const Config& config) {
  if (!uses_ring(config)) return "";
  const auto bytes = config.ring_bytes;
  const auto size = bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                    : bytes % (1 << 10) == 0 ? std::to_string(bytes >> 10) + " KiB"
                                             : std::to_string(bytes) + " bytes";
  std::string text = "arrays of the latest calls held in a " + size +
                     " ring, written on the first NaN/Inf, an uncaught exception, a termination signal or "
                     "ophook.dump_ring()";
  if (config.ring_for_nan_hunt) {
    text += " (OPHOOK_NAN's default: OPHOOK_RING_BYTES sets another size, OPHOOK_MODE=dump writes every array)";
  }
  return text;
}

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::Trace: return "trace";
    case Mode::Stats: return "stats";
    case Mode::Dump: return "dump";
  }
  return "dump";
}

std::string_view to_string(NanPolicy policy) {
  switch (policy) {
    case NanPolicy::Off: return "off";
    case NanPolicy::Warn: return "warn";
    case NanPolicy::Raise: return "raise";
  }
  return "off";
}

std::string_view to_string(CompilePolicy policy) {
  switch (policy) {
    case CompilePolicy::Eager: return "eager";
    case CompilePolicy::Ignore: return "ignore";
    case CompilePolicy::Record: return "record";
  }
  return "eager";
}

std::string_view to_string(TensorCopy copy) {
  switch (copy) {
    case TensorCopy::Torch: return "torch";
    case TensorCopy::FakeDevice: return "fake-device";
    case TensorCopy::Auto: break;
  }
  return "auto";
}

std::string levels_to_string(const Levels& levels) {
  std::string out;
  auto add = [&out](bool on, std::string_view name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(levels.numpy, "numpy");
  add(levels.torch_function, "torch_function");
  add(levels.torch_dispatch, "torch_dispatch");
  return out;
}

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
      {"dump_include", json_text(config.dump_include)},
      {"tensor_copy", to_string(config.tensor_copy)},
      {"max_bytes", config.max_bytes},
      {"queue_bytes", config.queue_bytes},
      {"stack", config.stack},
      {"nan", to_string(config.nan)},
      {"compile", to_string(config.compile)},
      {"overrides", json_text(config.overrides)},
      {"log_level", log_level_name(config.log_level)},
      {"strict", config.strict},
      {"disable", config.disable},
  };
}

}  // namespace ophook::core
