#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophook::cli {

/// The `ophook run` options that become OPHOOK_* variables; unset options leave the variable
/// alone, so the child sees the caller's value or the library default.
struct HookSettings {
  std::optional<std::string> output;     // OPHOOK_OUTPUT (made absolute by the caller)
  std::optional<std::string> mode;       // OPHOOK_MODE
  std::optional<std::string> levels;     // OPHOOK_LEVELS
  std::optional<std::string> include;    // OPHOOK_INCLUDE
  std::optional<std::string> exclude;    // OPHOOK_EXCLUDE
  std::optional<std::string> max_bytes;  // OPHOOK_MAX_BYTES
};

/// (name, value) for every setting given, in a fixed order. Pure.
std::vector<std::pair<std::string, std::string>> hook_variables(const HookSettings& settings);

/// An LD_PRELOAD value with `library` first, then the entries of `existing` (the loader accepts
/// spaces and colons as separators) minus any copy of `library`, joined by ':'. Pure.
std::string prepend_preload(std::string_view library, std::string_view existing);

// Validators in CLI11's shape: an empty string when `value` is accepted, else what is wrong.

/// OPHOOK_LEVELS: a comma list of numpy, torch_function, torch_dispatch.
std::string check_levels(const std::string& value);
/// OPHOOK_INCLUDE / OPHOOK_EXCLUDE: an ECMAScript regular expression.
std::string check_regex(const std::string& value);
/// OPHOOK_MAX_BYTES: an integer with an optional K/M/G/T suffix.
std::string check_byte_size(const std::string& value);

}  // namespace ophook::cli
