#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "report/first_nonfinite.hpp"

namespace ophook::cli {

/// "rank0-3,5": rank numbers (sorted, distinct), runs of consecutive ones as ranges; past
/// `most_ranges` ranges, ",…".
std::string rank_ranges(const std::vector<std::int64_t>& sorted, std::size_t most_ranges = SIZE_MAX);

/// "rank0-3,5,pid42": the processes' labels, ranks by number with runs of consecutive ones as
/// ranges, other labels after.
std::string rank_list(const RunReport& report, const std::vector<std::size_t>& processes);

/// The report's lines on the ranks' first NaN/Inf: the culprit's rank, then each collective that
/// carried it on with the ranks it reached (ranks listed as ranges: rank0-3,5); at most `limit`
/// lines whatever the number of ranks, the rest counted. Empty for one process or no NaN/Inf.
std::vector<std::string> describe_rank_chain(const RunReport& report, const std::vector<RankNonfinite>& ranks,
                                             std::size_t limit);

}  // namespace ophook::cli
