#include "compare/run_comparison.hpp"

#include <fmt/format.h>

#include "compare/align/kernel_pairing.hpp"
#include "compare/align/record_alignment.hpp"
#include "compare/op_totals.hpp"
#include "compare/process_pairing.hpp"
#include "compare/values/record_compare.hpp"
#include "ophook/error.hpp"
#include "read/parallel_for.hpp"
#include "read/trace_reader.hpp"

namespace ophook::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kNoPair = static_cast<std::size_t>(-1);

void check_run_dir(const fs::path& dir, const char* role) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    throw Error(fmt::format("{} directory {}: not found", role, dir.string()));
  }
  if (!fs::is_directory(dir, ec)) {
    throw Error(fmt::format("{} directory {}: not a directory", role, dir.string()));
  }
}

void align(ProcessComparison& process) {
  RecordAlignment alignment = align_records(process.base, process.other);
  process.identical_sequences = alignment.identical;
  process.steps = std::move(alignment.steps);
  pair_kernels(process);
  process.pair_index_of_step.assign(process.steps.size(), kNoPair);
  for (std::size_t s = 0; s < process.steps.size(); ++s) {
    const AlignStep& step = process.steps[s];
    if (!step.paired()) continue;
    process.pair_index_of_step[s] = process.pairs.size();
    PairResult pair;
    pair.base = static_cast<std::size_t>(step.base);
    pair.other = static_cast<std::size_t>(step.other);
    process.pairs.push_back(std::move(pair));
  }
}

/// Small pairs go through all threads one pair each; large ones then run one at a time with
/// all threads inside the array kernel.
void compare_pairs(ProcessComparison& process, const CompareOptions& options) {
  const PairContext context{process.base_dir, process.new_dir, options.tolerance,
                            UninitializedMemory(process.base), UninitializedMemory(process.other)};
  std::vector<std::size_t> small, large;
  for (std::size_t i = 0; i < process.pairs.size(); ++i) {
    const PairResult& p = process.pairs[i];
    (is_large_pair(process.base[p.base], process.other[p.other]) ? large : small).push_back(i);
  }
  auto run = [&](std::size_t index, unsigned threads) {
    PairResult& p = process.pairs[index];
    PairResult done =
        compare_records(process.base[p.base], process.other[p.other], context, threads);
    done.base = p.base;
    done.other = p.other;
    p = std::move(done);
  };
  parallel_for(small.size(), options.threads, [&](std::size_t k) { run(small[k], 1); });
  for (std::size_t index : large) run(index, options.threads);
}

/// Reads one side of a process pair; an absent side stays without records.
void load_side(const std::vector<ProcessDir>& processes, std::optional<std::size_t> index,
               std::string& name, fs::path& dir, std::vector<TraceRecord>& records,
               const CompareOptions& options, std::vector<std::string>& warnings) {
  if (!index) return;
  const ProcessDir& process = processes[*index];
  name = process.name;
  dir = process.dir;
  records = read_trace(process.dir / "trace.jsonl", warnings, options.threads).records;
}

}  // namespace

CompareResult run_comparison(const CompareOptions& options) {
  check_run_dir(options.base_dir, "BASE");
  check_run_dir(options.new_dir, "NEW");
  CompareResult result;
  result.base_dir = options.base_dir;
  result.new_dir = options.new_dir;
  result.tolerance = options.tolerance;
  const auto base = find_processes(options.base_dir, "BASE", result.warnings);
  const auto other = find_processes(options.new_dir, "NEW", result.warnings);
  for (const ProcessPair& pair : pair_processes(base, other)) {
    ProcessComparison& process = result.processes.emplace_back();
    load_side(base, pair.base, process.base_name, process.base_dir, process.base, options,
              result.warnings);
    load_side(other, pair.other, process.new_name, process.new_dir, process.other, options,
              result.warnings);
    align(process);
    compare_pairs(process, options);
    judge_kernel_pair_inputs(process);
    total_process(process);
  }
  total_runs(result);
  return result;
}

}  // namespace ophook::cli
