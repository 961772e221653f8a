// Byte counts of the settings: "4096", "64K", "256M", "1G", "2T".
#include <limits>
#include <string>

#include "config/setting_parser.hpp"
#include "ophook/config/settings.hpp"

namespace ophook::core {

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

}  // namespace ophook::core
