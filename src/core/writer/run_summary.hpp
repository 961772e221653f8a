#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <unordered_set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ophook/model/record.hpp"
#include "ophook/model/record_queue.hpp"
#include "writer/array_outcome.hpp"

namespace ophook::core {

class OutputDir;
class Recorder;

/// What the writer thread learns over a process's run — per-op counts and times, the .npy byte
/// budget, write errors, the first call that produced NaN/Inf, the distinct API configurations —
/// and the end-of-process files made from it: summary.json, api_apis.txt, api_configs.txt,
/// api_statistics.txt. Writer thread only.
class RunSummary {
 public:
  explicit RunSummary(const Recorder& recorder);

  void observe(const CallRecord& record, const std::vector<ArrayOutcome>& outcomes);
  /// A call's API line, for the distinct configurations (api_configs.txt). Idempotent.
  void observe_config(const std::string& api_line);

  /// True when writing `bytes` more still fits in OPHOOK_MAX_BYTES (bytes written: a link is
  /// free); the first refusal logs the one warning that the run continues in stats mode, naming
  /// `record`'s call and step and the settings that spend the budget better.
  bool budget_allows(std::uint64_t bytes, const CallRecord& record);
  bool budget_exhausted() const noexcept { return budget_exhausted_; }
  void count_written(std::uint64_t bytes) { files_ += 1, bytes_named_ += bytes, bytes_written_ += bytes; }
  void uncount_written(std::uint64_t bytes) { files_ -= 1, bytes_named_ -= bytes, bytes_written_ -= bytes; }
  /// A file named as a hard link to an earlier one of the same `bytes`.
  void count_linked(std::uint64_t bytes) { files_ += 1, files_linked_ += 1, bytes_named_ += bytes; }
  /// summary.json's "store_once" and "ring" objects, set before write_files.
  void set_store_once(nlohmann::ordered_json store_once) { store_once_ = std::move(store_once); }
  void set_ring(nlohmann::ordered_json ring) { ring_ = std::move(ring); }
  /// Counts a failed write; true for the first failure (the caller logs that one).
  bool count_write_error(const std::string& what, int error);
  /// Notes that an output (".npy files", "trace.jsonl") stopped for the rest of the run, and why.
  void note_stopped(const std::string& output, const std::string& reason) { stopped_[output] = reason; }
  void count_record_error() { ++record_errors_; }
  /// An array not written because the termination signal's time limit for files had passed.
  void count_unwritten_at_termination() { ++unwritten_at_termination_; }

  /// The size trace.jsonl ended with (summary.json's "trace"): a reader that finds the file
  /// otherwise knows the index is not that file's.
  void set_trace_bytes(std::uint64_t bytes) { trace_bytes_ = bytes; }

  void write_files(OutputDir& dir, std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits);

 private:
  struct OpTotals {
    std::uint64_t count = 0, errors = 0, nonfinite = 0;
    std::uint64_t nonfinite_expected = 0;  // inside np.errstate that silences the condition
    std::int64_t total_ns = 0, max_ns = 0;
  };
  /// A process group's collectives seen here (summary.json's "collectives").
  struct GroupCalls {
    static constexpr std::size_t kRecent = 8;
    std::uint64_t calls = 0, last_group_seq = 0;
    std::uint32_t ranks_id = 0;
    // The latest collectives seen, {seq, group_seq}: a culprit seen after collectives issued after
    // it (its record came late: a call around them, a node judged later) is placed among these.
    std::array<std::pair<std::uint64_t, std::uint64_t>, kRecent> recent{};
  };
  struct SlowCall {
    std::int64_t dur_ns;
    std::uint64_t seq;
    std::uint32_t op_id;
    std::string source;
    bool operator>(const SlowCall& o) const { return dur_ns > o.dur_ns; }
  };
  static constexpr std::size_t kSlowest = 10;
  static constexpr std::size_t kMaxConfigs = 1'000'000;

  nlohmann::ordered_json summary_json(std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits) const;
  /// The first culprit's place among the collectives, set when it is seen: per group, the number of
  /// the last collective issued before it (one completing later than the culprit counts when it comes).
  void place_culprit(std::uint64_t seq);
  void note_collective_before_culprit(const CallRecord& record);
  /// Calls per level, phase and module, and the steps that had recorded calls.
  nlohmann::ordered_json counts_json() const;
  void observe_step(std::uint64_t step);
  std::string statistics_text() const;

  const Recorder& recorder_;
  std::unordered_map<std::uint32_t, OpTotals> ops_;  // by the first op id of each name
  std::vector<std::uint32_t> first_seen_;
  std::vector<SlowCall> slowest_;  // min-heap on dur_ns
  std::unordered_set<std::string> configs_;
  bool configs_truncated_ = false;
  std::uint64_t calls_ = 0, files_ = 0, files_linked_ = 0, bytes_named_ = 0, bytes_written_ = 0, record_errors_ = 0;
  std::array<std::uint64_t, kLevelCount> level_calls_{};
  std::array<std::uint64_t, kPhaseCount> phase_calls_{};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> steps_;  // ranges of steps with records
  std::unordered_map<std::uint32_t, std::uint64_t> module_calls_;  // by interned module name
  std::map<std::uint32_t, GroupCalls> groups_;                      // by interned group name
  // Per group, the last collective issued before first_nonfinite_'s call; unknown (null in the
  // file) once an earlier culprit replaced a first one, as the collectives between them are not kept.
  std::map<std::uint32_t, std::uint64_t> collectives_before_culprit_;
  bool culprit_place_known_ = true;
  std::uint64_t trace_bytes_ = 0;
  std::uint64_t write_errors_ = 0;
  std::uint64_t unwritten_at_termination_ = 0;
  std::string first_write_error_;
  nlohmann::ordered_json stopped_ = nlohmann::ordered_json::object();
  bool budget_exhausted_ = false;
  std::uint64_t budget_exhausted_at_ = 0, budget_exhausted_at_step_ = 0;
  nlohmann::ordered_json store_once_ = nullptr, ring_ = nullptr;
  nlohmann::ordered_json first_nonfinite_;
  nlohmann::ordered_json first_received_;  // the first collective whose outputs brought NaN/Inf in
};

}  // namespace ophook::core
