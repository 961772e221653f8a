// libFuzzer harness: hostile OPHOOK_* settings. The input is "NAME=value" lines; every name
// looked up that is not among them is unset. parse_config must never throw and must produce
// printable errors and a summary.json view of whatever it accepted.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ophook/config/config_json.hpp"
#include "ophook/config/settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string, std::less<>> settings;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const std::size_t eq = line.find('=');
    if (eq != std::string_view::npos) settings[std::string(line.substr(0, eq))] = line.substr(eq + 1);
    pos = end + 1;
  }
  const auto result = ophook::core::parse_config([&](std::string_view name) {
    const auto it = settings.find(name);
    return it == settings.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  for (const auto& error : result.errors) (void)error.message();
  (void)ophook::core::config_to_json(result.config).dump();
  (void)ophook::core::parse_byte_size(text);
  return 0;
}
