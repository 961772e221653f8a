#pragma once
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compare/result.hpp"

namespace ophook::cli {

/// Fills the counts and the first divergent call and first origin
/// (with their seqs and when they happened on BASE's clock: the t_ns of the step's BASE record,
/// or of the last BASE record before it) of one process comparison whose pairs have been compared.
void total_process(ProcessComparison& process);

/// The per-op rows of a run, added process by process in any order and from any thread, ordered
/// as if they had been added in process order: by where each op first appears (the lowest
/// process index, then the step there). Holds one row per op, whatever the number of processes.
class ComparedOpTable {
 public:
  /// Adds the calls of `process`, the `index`-th of the run (totalled, its steps still kept).
  void add(std::size_t index, const ProcessComparison& process);
  /// The rows, differing ops first, then by first appearance; the table is empty after.
  std::vector<ComparedOp> take();

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> row_of_op_;
  std::vector<ComparedOp> rows_;
  std::vector<std::pair<std::size_t, std::size_t>> first_seen_;  // (process, step) of each row
};

/// Fills the per-op table (from `ops`, which holds every process's calls), the totals and the
/// earliest divergent call and origin over all the (totalled) process comparisons of `result`.
/// Across processes "earliest" is by BASE's clock; the processes of both must be detailed.
void total_runs(CompareResult& result, ComparedOpTable& ops);

}  // namespace ophook::cli
