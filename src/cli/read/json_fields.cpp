#include "read/json_fields.hpp"

#include <fmt/format.h>

#include "ophook/error.hpp"

namespace ophook::cli {
namespace {

const nlohmann::json* field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const char* key, std::string_view where, const char* wanted) {
  throw Error(fmt::format("{}: \"{}\" is not {} or null", where, key, wanted));
}

}  // namespace

std::optional<double> optional_number(const nlohmann::json& object, const char* key, std::string_view where) {
  const auto* value = field(object, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) wrong_type(key, where, "a number");
  return value->get<double>();
}

std::optional<std::int64_t> optional_integer(const nlohmann::json& object, const char* key, std::string_view where) {
  const auto* value = field(object, key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number_integer()) wrong_type(key, where, "an integer");
  return value->get<std::int64_t>();
}

}  // namespace ophook::cli
