#include "compare/run_comparison.hpp"

#include <fmt/format.h>

#include <algorithm>

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
               unsigned threads, std::vector<std::string>& warnings) {
  if (!index) return;
  const ProcessDir& process = processes[*index];
  name = process.name;
  dir = process.dir;
  records = read_trace(process.dir / "trace.jsonl", warnings, threads).records;
}

/// The two runs' processes and how they pair.
struct Processes {
  std::vector<ProcessDir> base, other;
  std::vector<ProcessPair> pairs;
};

/// Reads, aligns, compares and totals one process pair on `threads` threads.
ProcessComparison compare_process(const Processes& runs, const ProcessPair& pair,
                                  const CompareOptions& options, unsigned threads,
                                  std::vector<std::string>& warnings) {
  ProcessComparison process;
  load_side(runs.base, pair.base, process.base_name, process.base_dir, process.base, threads,
            warnings);
  load_side(runs.other, pair.other, process.new_name, process.new_dir, process.other, threads,
            warnings);
  compare_loaded(process, options.tolerance, threads);
  return process;
}

/// The processes whose calls the outputs show (compare/run_comparison.hpp): the first one, the
/// first kDetailedProcesses that show calls, and those of the earliest divergence and origin.
std::vector<std::size_t> processes_shown(const std::vector<ProcessComparison>& processes) {
  std::vector<std::size_t> shown{0};
  std::optional<std::size_t> divergence, origin;
  auto earlier = [&](std::optional<ProcessComparison::FirstCall> ProcessComparison::*first,
                     std::size_t i, const std::optional<std::size_t>& best) {
    const auto& call = processes[i].*first;
    return call && (!best || call->clock < (processes[*best].*first)->clock);
  };
  for (std::size_t i = 0; i < processes.size(); ++i) {
    const ProcessComparison& p = processes[i];
    if (earlier(&ProcessComparison::first_divergence, i, divergence)) divergence = i;
    if (earlier(&ProcessComparison::first_origin, i, origin)) origin = i;
    if (i > 0 && shown.size() <= kDetailedProcesses && p.differs()) shown.push_back(i);
  }
  for (const auto& extra : {divergence, origin}) {
    if (extra && std::find(shown.begin(), shown.end(), *extra) == shown.end()) {
      shown.push_back(*extra);
    }
  }
  return shown;
}

}  // namespace

void compare_loaded(ProcessComparison& process, Tolerance tolerance, unsigned threads) {
  CompareOptions options;
  options.tolerance = tolerance;
  options.threads = threads;
  align(process);
  compare_pairs(process, options);
  judge_kernel_pair_inputs(process);
  total_process(process);
}

CompareResult run_comparison(const CompareOptions& options) {
  check_run_dir(options.base_dir, "BASE");
  check_run_dir(options.new_dir, "NEW");
  CompareResult result;
  result.base_dir = options.base_dir;
  result.new_dir = options.new_dir;
  result.tolerance = options.tolerance;
  Processes runs;
  runs.base = find_processes(options.base_dir, "BASE", result.warnings);
  runs.other = find_processes(options.new_dir, "NEW", result.warnings);
  runs.pairs = pair_processes(runs.base, runs.other);
  ComparedOpTable ops;
  result.processes.resize(runs.pairs.size());
  if (runs.pairs.size() <= kDetailedProcesses) {
    // Few processes: one at a time, each on every thread, all of them kept.
    for (std::size_t i = 0; i < runs.pairs.size(); ++i) {
      result.processes[i] =
          compare_process(runs, runs.pairs[i], options, options.threads, result.warnings);
      ops.add(i, result.processes[i]);
    }
  } else {
    // Many: one process per thread, each let go once totalled, so that memory holds as many
    // processes' records as there are threads; then the few shown again, in full.
    std::vector<std::vector<std::string>> warnings(runs.pairs.size());
    parallel_for(runs.pairs.size(), options.threads, [&](std::size_t i) {
      result.processes[i] = compare_process(runs, runs.pairs[i], options, 1, warnings[i]);
      ops.add(i, result.processes[i]);
      result.processes[i].release_details();
    });
    for (const auto& process_warnings : warnings) {
      result.warnings.insert(result.warnings.end(), process_warnings.begin(),
                             process_warnings.end());
    }
    std::vector<std::string> again;  // the same warnings as the first reading
    for (std::size_t i : processes_shown(result.processes)) {
      result.processes[i] = compare_process(runs, runs.pairs[i], options, options.threads, again);
    }
  }
  total_runs(result, ops);
  return result;
}

}  // namespace ophook::cli
