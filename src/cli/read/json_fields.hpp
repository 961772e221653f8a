#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

/// The fields of the JSON documents a run holds (trace.jsonl's records, summary.json, the replay
/// package's answers), read one way everywhere: a field that is absent or null has no value; one of
/// another type than asked is an input error, named with `where` (the caller's words for the
/// object: "trace.jsonl:12 value args[0]: stats").
namespace ophook::cli {

/// The number at `key`; nullopt when absent or null. Throws ophook::Error for another type.
std::optional<double> optional_number(const nlohmann::json& object, const char* key, std::string_view where);

/// The integer at `key` (an integral JSON number); nullopt when absent, null or not an object.
/// Throws ophook::Error for another type.
std::optional<std::int64_t> optional_integer(const nlohmann::json& object, const char* key, std::string_view where);

}  // namespace ophook::cli
