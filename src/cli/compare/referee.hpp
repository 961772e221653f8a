#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "compare/result.hpp"
#include "render/html/html_page.hpp"

namespace ophook::cli {

/// Differing pairs judged per op at most: an op that differs in thousands of calls is judged on
/// its first ones.
inline constexpr std::size_t kRefereePairsPerOp = 32;

/// The engine's request for `result`: per op with differing pairs whose records have every array
/// in a file on both sides, the first kRefereePairsPerOp of those pairs as [base seq, new seq]. Pure.
nlohmann::json referee_request(const CompareResult& result);

/// Sets OpSummary::referee from the engine's response (ops by name; others left unset). Throws
/// ophook::Error when the response is malformed.
void apply_referee_response(CompareResult& result, const nlohmann::json& request, const nlohmann::json& response);

/// Asks the replay engine (run by `python`, see replay/python_engine.hpp; one process for all ops) which
/// run is closer to float64 on each differing op, and records the verdicts in `result`.
void referee_float64(CompareResult& result, const std::string& python, unsigned jobs);

/// The verdicts in the three outputs of `compare`.
void print_referee_text(const CompareResult& result, std::ostream& out);
nlohmann::ordered_json referee_json(const RefereeVerdict& verdict);
void add_referee_html(const CompareResult& result, HtmlPage& page);

}  // namespace ophook::cli
