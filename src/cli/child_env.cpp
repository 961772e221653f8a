#include "child_env.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ophook/config.hpp"

namespace ophook::cli {

std::vector<std::pair<std::string, std::string>> hook_variables(const HookSettings& settings) {
  std::vector<std::pair<std::string, std::string>> vars;
  const std::pair<const char*, const std::optional<std::string>*> table[] = {
      {"OPHOOK_OUTPUT", &settings.output},   {"OPHOOK_MODE", &settings.mode},
      {"OPHOOK_LEVELS", &settings.levels},   {"OPHOOK_INCLUDE", &settings.include},
      {"OPHOOK_EXCLUDE", &settings.exclude}, {"OPHOOK_MAX_BYTES", &settings.max_bytes},
  };
  for (const auto& [name, value] : table) {
    if (value->has_value()) {
      vars.emplace_back(name, **value);
    }
  }
  return vars;
}

std::string prepend_preload(std::string_view library, std::string_view existing) {
  std::string result(library);
  std::size_t pos = 0;
  while (pos < existing.size()) {
    const std::size_t end = std::min(existing.find_first_of(" :", pos), existing.size());
    const std::string_view entry = existing.substr(pos, end - pos);
    if (!entry.empty() && entry != library) {
      result += ':';
      result += entry;
    }
    pos = end + 1;
  }
  return result;
}

std::string check_levels(const std::string& value) {
  static constexpr std::string_view kAccepted[] = {"numpy", "torch_function", "torch_dispatch"};
  std::size_t pos = 0;
  bool any = false;
  while (pos <= value.size()) {
    const std::size_t end = std::min(value.find(',', pos), value.size());
    const std::string_view item = std::string_view(value).substr(pos, end - pos);
    if (!item.empty()) {
      if (std::find(std::begin(kAccepted), std::end(kAccepted), item) == std::end(kAccepted)) {
        return fmt::format("unknown level '{}' (accepted: numpy, torch_function, torch_dispatch)",
                           item);
      }
      any = true;
    }
    pos = end + 1;
  }
  return any ? "" : "empty level list (accepted: numpy, torch_function, torch_dispatch)";
}

std::string check_regex(const std::string& value) {
  const auto problem = core::regex_problem(value);
  return problem.empty() ? "" : fmt::format("'{}' is not a valid ECMAScript regular expression ({})", value, problem);
}

std::string check_byte_size(const std::string& value) {
  if (core::parse_byte_size(value)) {
    return "";
  }
  return fmt::format("'{}' is not a byte count (an integer with an optional K/M/G/T suffix)",
                     value);
}

}  // namespace ophook::cli
