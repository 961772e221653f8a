#pragma once
#include <string>
#include <utility>
#include <vector>

#include "report/run_report.hpp"

namespace ophook::cli {

/// What a run consists of, from its counts over all processes: calls per level ("levels"), per
/// phase ("phases"), the steps they were made in ("steps") and the modules with the most calls
/// ("top modules"), each as a (label, text) fact for `ophook report`. Pure.
std::vector<std::pair<std::string, std::string>> composition_facts(const RunReport& report,
                                                                   std::size_t top_modules = 5);

}  // namespace ophook::cli
