#include "compare/values/stats_diff.hpp"

#include <cmath>
#include <optional>

namespace ophook::cli {

ArrayDiff compare_stats(const StatsSpec& a, const StatsSpec& b, Tolerance tol) {
  ArrayDiff diff;
  diff.compared = true;
  if (a.has_xxh64 && b.has_xxh64 && a.xxh64 == b.xxh64) {
    diff.bitwise_equal = true;
    diff.cosine = 1.0;
    return diff;
  }
  diff.max_rel = std::numeric_limits<double>::quiet_NaN();
  diff.nonfinite_mismatch = (a.nan > b.nan ? a.nan - b.nan : b.nan - a.nan) +
                            (a.inf > b.inf ? a.inf - b.inf : b.inf - a.inf);
  const std::optional<double> StatsSpec::*fields[] = {&StatsSpec::min, &StatsSpec::max,
                                                      &StatsSpec::mean, &StatsSpec::std};
  for (auto field : fields) {
    const auto& x = a.*field;
    const auto& y = b.*field;
    if (!x && !y) continue;
    if (!x || !y) {
      ++diff.not_close;
      continue;
    }
    const double d = std::fabs(*x - *y);
    if (d > diff.max_abs || std::isnan(d)) diff.max_abs = d;
    if (!(d <= tol.atol + tol.rtol * std::fabs(*x))) ++diff.not_close;
  }
  return diff;
}

}  // namespace ophook::cli
