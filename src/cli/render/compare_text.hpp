#pragma once
#include <ostream>

#include "compare/result.hpp"

namespace ophook::cli {

/// Writes the terminal report of a comparison: the verdict (first line), the runs and their
/// process pairs, the first divergent call and the first origin, the per-op table, the first
/// differing calls (marked origin or propagated) and the unmatched calls, and the verdict again
/// (last line, "verdict: ...").
void print_compare_text(const CompareResult& result, std::ostream& out);

/// "SAME: ...", "DIFFERENT: ..." or "SAME CALLS, VALUES NOT RECORDED: ...", with how many paired
/// calls had values to compare; the verdict line without its "verdict: " prefix.
std::string verdict_text(const CompareResult& result);

}  // namespace ophook::cli
