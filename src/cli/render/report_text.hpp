#pragma once
#include <ostream>
#include <string>

#include "report/run_report.hpp"

namespace ophook::cli {

/// Writes the terminal summary of a run: processes, totals, the top ops by count and by total
/// time, the first NaN/Inf, the byte budget and write errors.
void print_report_text(const RunReport& report, std::ostream& out, std::size_t top);

/// "seq=17 op=numpy.log source=... (outputs[0]: 3 NaN, 0 Inf) in pid4242", or "none".
std::string describe_nonfinite(const RunReport& report);

/// The summary facts of a run as (label, text) lines, shared by the text and HTML views.
std::vector<std::pair<std::string, std::string>> report_facts(const RunReport& report);

}  // namespace ophook::cli
