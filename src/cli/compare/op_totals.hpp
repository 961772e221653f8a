#pragma once
#include "compare/result.hpp"

namespace ophook::cli {

/// Fills the counts, the first divergent call and the first origin of one process comparison
/// whose pairs have been compared.
void summarise_process(ProcessComparison& process);

/// Fills the per-op table, the totals and the earliest divergent call and origin over all the
/// (summarised) process comparisons of `result`. Across processes "earliest" is by BASE's clock:
/// the t_ns of the BASE record of the step, or of the last BASE record before it.
void summarise_runs(CompareResult& result);

}  // namespace ophook::cli
