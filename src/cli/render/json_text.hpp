#pragma once
#include <cmath>
#include <optional>
#include <string>

/// Small pieces the JSON outputs (compare.json, the referee's verdicts, the Chrome trace) share,
/// for either of nlohmann's JSON types.
namespace ophook::cli {

/// One line of JSON; invalid UTF-8 (from file names) is replaced rather than thrown on.
template <class Json>
std::string compact(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// The text, or null where there is none.
template <class Json>
Json nullable(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json();
}

/// A double as JSON: a number when finite, else the string "inf", "-inf" or "nan".
template <class Json>
Json number_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

}  // namespace ophook::cli
