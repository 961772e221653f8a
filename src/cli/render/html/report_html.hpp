#pragma once
#include <string>

#include "report/run_report.hpp"

namespace ophook::cli {

/// A run as one self-contained HTML page: the summary facts, bar charts of calls and of total
/// time per op, a timeline of the calls (one lane per process and thread) with the first NaN/Inf
/// marked, and the per-op table. Pure.
std::string render_report_html(const RunReport& report, std::size_t top);

}  // namespace ophook::cli
