#pragma once
#include "ophook/export.hpp"
#include <spdlog/spdlog.h>

#include <memory>
#include <string_view>

namespace ophook::core {

/// The process-wide spdlog logger "ophook" (stderr, pattern "[ophook pid:tid] level: msg").
/// Thread-safe. After fork() the child calls reset_logger_after_fork(): a mutex held by another
/// thread at fork time would otherwise stay locked forever in the child.
OPHOOK_API spdlog::logger& logger();

/// Sets the level from an OPHOOK_LOG_LEVEL value already validated by the config parser.
OPHOOK_API void set_log_level(spdlog::level::level_enum level);

/// Installs a fresh logger object (same level) in place of the old one, which is deliberately
/// leaked because its sink mutex may be held; call only in a just-forked child.
OPHOOK_API void reset_logger_after_fork();

}  // namespace ophook::core
