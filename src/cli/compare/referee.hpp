#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "compare/result.hpp"

namespace ophook::cli {

/// Differing pairs judged per op at most: an op that differs in thousands of calls is judged on
/// its first ones.
inline constexpr std::size_t kRefereePairsPerOp = 32;

/// The replay package's request for `result`: per op with differing pairs whose records have every array
/// in a file on both sides, the first kRefereePairsPerOp of those pairs as [base seq, new seq]. Pure.
nlohmann::json referee_request(const CompareResult& result);

/// Sets ComparedOp::referee from the replay package's response (ops by name; others left unset). Throws
/// ophook::Error when the response is malformed.
void apply_referee_response(CompareResult& result, const nlohmann::json& request, const nlohmann::json& response);

/// Asks the replay package (run by `python`, see replay/replay_interpreter.hpp; one process for all ops) which
/// run is closer to float64 on each differing op, and records the verdicts in `result`.
void referee_float64(CompareResult& result, const std::string& python, unsigned jobs);

}  // namespace ophook::cli
