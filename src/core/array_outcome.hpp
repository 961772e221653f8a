#pragma once
#include <optional>
#include <string>

#include "ophook/stats.hpp"

namespace ophook::core {

/// What the writer made of one captured array: its file (empty = none) and statistics.
struct ArrayOutcome {
  std::string file;
  std::optional<ArrayStats> stats;
  bool is_output = false;
};

}  // namespace ophook::core
