#pragma once
#include "ophook/export.hpp"
#include <fmt/format.h>
#include <spdlog/common.h>

#include <cstdint>

namespace ophook::core {

enum class LogLevel : std::uint8_t;  // ophook/config/config.hpp

// ophook's lines on stderr ("[ophook pid:tid] level: message"), through a process-wide spdlog
// logger that only log.cpp sees: spdlog is header-only here (libophook_core.so links nothing but libc
// and libstdc++), and its logger's header costs a dozen seconds of compilation in every file that
// includes it. Callers format with fmt, checked at compile time as spdlog would.

/// Whether a line of this level would be written (formatting is skipped when not).
OPHOOK_API bool log_enabled(spdlog::level::level_enum level) noexcept;

/// Formats and writes one line. Never throws: a line that cannot be formatted or written is
/// dropped, as spdlog does, so that logging never fails the program.
OPHOOK_API void log_formatted(spdlog::level::level_enum level, fmt::string_view format, fmt::format_args args) noexcept;

template <typename... Args>
void log(spdlog::level::level_enum level, fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (log_enabled(level)) log_formatted(level, format, fmt::make_format_args(args...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) noexcept {
  log(spdlog::level::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) noexcept {
  log(spdlog::level::info, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) noexcept {
  log(spdlog::level::warn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) noexcept {
  log(spdlog::level::err, format, std::forward<Args>(args)...);
}

/// Sets the level from an OPHOOK_LOG_LEVEL value already validated by the config parser.
OPHOOK_API void set_log_level(LogLevel level);

/// Installs a fresh logger (same level) in place of the old one, which is deliberately leaked
/// because its sink mutex may be held by a thread fork() dropped; call only in a just-forked child.
OPHOOK_API void reset_logger_after_fork();

}  // namespace ophook::core
