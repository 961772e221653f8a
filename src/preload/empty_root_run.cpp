#include "empty_root_run.hpp"

#include <exception>
#include <string>

#include "ophook/config/settings.hpp"
#include "ophook/log.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/process/run_facts.hpp"

namespace ophook::preload {
namespace {

core::Settings decode_settings(std::string_view encoded) {
  core::Settings settings;
  while (!encoded.empty()) {
    const auto end = encoded.find('\0');
    const auto pair = encoded.substr(0, end);
    if (const auto equals = pair.find('='); equals != std::string_view::npos) {
      settings.emplace(std::string(pair.substr(0, equals)), std::string(pair.substr(equals + 1)));
    }
    encoded = end == std::string_view::npos ? std::string_view{} : encoded.substr(end + 1);
  }
  return settings;
}

}  // namespace

bool write_empty_root_run(std::string_view encoded_settings, std::string_view python_version,
                          std::string_view start_message) noexcept {
  try {
    const auto parsed = core::parse_config(decode_settings(encoded_settings));
    if (!parsed.errors.empty()) {  // checked at start-up already: the shim would not get here
      core::log_error("cannot start recording: {}", parsed.errors.front().message());
      return false;
    }
    core::set_log_level(parsed.config.log_level);
    auto& recorder = core::Recorder::start(parsed.config, core::WriterThread::Inline);
    recorder.facts().set_version("python", python_version);
    core::log_info("{}", start_message);
    recorder.finish();
    return true;
  } catch (const std::exception& e) {
    core::log_error("cannot start recording: {}", e.what());
    return false;
  }
}

}  // namespace ophook::preload
