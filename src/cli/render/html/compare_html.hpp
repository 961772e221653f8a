#pragma once
#include <string>

#include "compare/result.hpp"

namespace ophook::cli {

/// The comparison as one self-contained HTML page: verdict, a chart of the max abs error of
/// each pair along the run (x = BASE seq, log scale, unmatched calls as ticks, first divergence
/// marked), the first divergent call, the per-op table, differing and unmatched calls. Pure.
std::string render_compare_html(const CompareResult& result);

}  // namespace ophook::cli
