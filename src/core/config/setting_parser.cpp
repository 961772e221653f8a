// The value parsers of SettingParser, which the settings table applies to each OPHOOK_* variable.
#include "config/setting_parser.hpp"

#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include "ophook/config/settings.hpp"

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
constexpr std::string_view kLevelsAccepted = "a non-empty comma-separated list of numpy, torch_function, torch_dispatch, collective";

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
  keyword(variable, field, kBooleans, "0, 1 (also false/true, no/yes, off/on)");
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
  Levels parsed{false, false, false, false};
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
    } else if (item == "collective") {
      parsed.collective = any = true;
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

void SettingParser::count(std::string_view variable, std::uint64_t& field, std::uint64_t minimum,
                          std::uint64_t maximum) {
  const auto value = get(variable);
  if (!value) return;
  const auto text = trim(*value);
  std::uint64_t parsed = 0;
  const auto* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, parsed);
  if (!text.empty() && error == std::errc() && at == end && parsed >= minimum && parsed <= maximum) {
    field = parsed;
  } else {
    reject(variable, *value, "a whole number from " + std::to_string(minimum) + " to " + std::to_string(maximum));
  }
}

}  // namespace ophook::core
