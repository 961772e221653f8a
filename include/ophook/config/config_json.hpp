#pragma once
#include <nlohmann/json.hpp>

#include "ophook/config/config.hpp"
#include "ophook/export.hpp"

namespace ophook::core {

/// The effective configuration as written into summary.json.
OPHOOK_API nlohmann::json config_to_json(const Config& config);

}  // namespace ophook::core
