#pragma once
#include <ostream>

#include "compare_result.hpp"

namespace ophook::cli {

/// Writes the terminal report of a comparison: the runs, the first divergent call, the per-op
/// table, the first differing and the unmatched calls, and a one-line verdict (last line).
void print_compare_text(const CompareResult& result, std::ostream& out);

/// "SAME: ..." or "DIFFERENT: ...", the verdict line without its "verdict: " prefix.
std::string verdict_text(const CompareResult& result);

}  // namespace ophook::cli
