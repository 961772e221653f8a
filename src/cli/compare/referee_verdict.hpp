#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace ophook::cli {

/// `compare --referee float64` on one op: which run's recorded outputs are closer to the op re-run
/// in float64 on that run's own inputs (the maximum relative error over the op's judged pairs).
struct RefereeVerdict {
  std::optional<std::string> closer;  // "base", "new" or "tie"; none when no pair could be judged
  std::optional<double> base_max_rel, new_max_rel;
  std::size_t pairs_judged = 0, pairs_asked = 0;
  std::string reason;  // why nothing was judged, when so
};

}  // namespace ophook::cli
