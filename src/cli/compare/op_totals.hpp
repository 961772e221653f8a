#pragma once
#include "compare/result.hpp"

namespace ophook::cli {

/// Fills the counts, the first divergent call and the first origin of one process comparison
/// whose pairs have been compared.
void total_process(ProcessComparison& process);

/// Fills the per-op table, the totals and the earliest divergent call and origin over all the
/// (totalled) process comparisons of `result`. Across processes "earliest" is by BASE's clock:
/// the t_ns of the BASE record of the step, or of the last BASE record before it.
void total_runs(CompareResult& result);

}  // namespace ophook::cli
