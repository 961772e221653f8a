#pragma once
#include "ophook/export.hpp"
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ophook/config/config.hpp"
#include "ophook/model/intern_table.hpp"
#include "ophook/model/record.hpp"
#include "ophook/process/process_rank.hpp"
#include "ophook/process/run_counters.hpp"
#include "ophook/writer/writer_thread.hpp"

namespace ophook::core {

class OpFilters;
class RecordQueue;
class RunFacts;
class TraceWriter;

/// One recorded operator name with its filter verdict, fixed at first sight.
struct OpEntry {
  std::string name;       // qualified: "numpy.add", "aten.mm.default"
  std::string file_stem;  // sanitized for file names
  Level level = Level::Ufunc;
  bool recorded = false;  // passes OPHOOK_INCLUDE/OPHOOK_EXCLUDE
  bool dumped = false;    // dump mode gives its arrays files (OPHOOK_DUMP_INCLUDE)
  bool uninitialized_output = false;  // returns_uninitialized_memory(name): no NaN finding
  bool writes_arguments = false;      // writes_into_arguments(name, level): OPHOOK_NAN judges inputs first
  /// Fields every trace line of the op carries after "level", as JSON text (`"computes":[…]` of a
  /// compiled kernel), given when the op is first registered; empty for most ops.
  std::string annotation;
  /// The first entry of the same name, when this one is that name with another annotation (a
  /// compiled kernel launched from another site); 0 for the first. Counts go by name.
  std::uint32_t same_name_as = 0;
};

/// The strings of the list `key` in an op's annotation (a compiled kernel's "computes", "modules"),
/// in order; empty when it has none.
OPHOOK_API std::vector<std::string> annotation_list(std::string_view annotation, const char* key);

/// The process's recorder: configuration, op/string/dtype tables, the sequence counter, the queue
/// and its writer thread, and the end-of-process summary. One instance per process, made by
/// start(); after fork() the child gets a fresh queue, writer and output directory of its own.
/// All methods are thread-safe; the ones used per call (op, next_seq, try_submit) take no lock.
class OPHOOK_API Recorder {
 public:
  /// The running recorder, or nullptr before start() / after a failed start.
  static Recorder* get() noexcept { return instance_.load(std::memory_order_acquire); }

  /// Starts recording with `config` (output directory chosen as docs/outputs.md, "Where", says). Returns
  /// the existing recorder when already started. Throws ophook::Error when the output directory
  /// cannot be used. `thread`: Inline for a run that ends before it records (see WriterThread).
  static Recorder& start(const Config& config, WriterThread thread);
  static Recorder& start(const Config& config);

  const Config& config() const noexcept { return config_; }
  /// This process's output directory; a child's changes once when it learns its rank (learn_rank).
  std::string output_path() const;
  int owner_pid() const noexcept { return owner_pid_.load(std::memory_order_relaxed); }
  /// When this process's recording began (CLOCK_MONOTONIC ns, the clock of a record's t_ns): the
  /// start of the run, or the fork for a forked child. Orders a run's processes by start.
  std::int64_t start_t_ns() const noexcept { return start_t_ns_; }
  /// The pid of the run's root process (this process's own pid when it is the root).
  int root_pid() const noexcept { return root_pid_; }

  /// The id of op `name` at `level`, registering it (and applying the filters) on first sight.
  std::uint32_t op_id(std::string_view name, Level level);
  /// The same for an op whose trace lines carry `annotation` (OpEntry::annotation): a name
  /// registered with another annotation gets an entry of its own for this one (same_name_as).
  std::uint32_t op_id(std::string_view name, Level level, std::string_view annotation);
  const OpEntry& op(std::uint32_t id) const noexcept { return ops_.at(id); }

  std::uint32_t intern(std::string_view text);
  const std::string& text(std::uint32_t id) const noexcept { return strings_.at(id); }
  std::uint32_t intern_dtype(const DtypeInfo& info);
  const DtypeInfo& dtype(std::uint32_t id) const noexcept { return dtypes_.at(id); }

  std::uint64_t next_seq() noexcept { return seq_.fetch_add(1, std::memory_order_relaxed); }

  /// Hands a finished record to the writer without waiting; false when the queue is full (then
  /// call submit() with the GIL released).
  bool try_submit(RecordPtr& record) noexcept;
  /// Hands a record to the writer, waiting for room.
  void submit(RecordPtr record) noexcept;
  /// Whether a record holding `bytes` of array data would fit in the queue now; wait_for_room
  /// (GIL released) waits until it does, before the data is copied (RecordQueue::wait_for_room).
  bool has_room(std::size_t bytes) const noexcept;
  void wait_for_room(std::size_t bytes) noexcept;
  /// Bytes of the records handed to the writer and not yet written (RecordQueue::bytes_held).
  std::size_t bytes_queued() const noexcept;

  /// Waits until everything submitted so far is on disk (but the calls held in dump mode's ring).
  void flush() noexcept;
  /// Writes OPHOOK_RING_BYTES' ring after every record submitted so far: the held calls' files
  /// and trace lines; `why` goes into summary.json. Waits until that is done (call without the
  /// GIL). False when there is no ring to write (not dump mode, no ring, recording finished).
  bool dump_ring(std::string_view why) noexcept;
  /// Flushes, writes summary.json and the api_* files, stops the writer. Idempotent; later
  /// records are dropped (and counted).
  void finish() noexcept;
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }

  /// For an interposed _exit(): finishes the output when called by the process that owns this
  /// recorder — never in a vfork() child, which shares the parent's memory. Safe without the GIL.
  /// The exit hooks run first.
  static void finish_before_exit() noexcept;

  /// Run before the output is finished (at exit, at the end of a run, before a termination
  /// signal's pause): each part of the capturing side that holds records back (devices' read-backs,
  /// collectives in flight) submits them if it can on the finishing thread. Added once each, in
  /// the order they run; at most kExitHooks.
  using ExitHook = void (*)() noexcept;
  static constexpr std::size_t kExitHooks = 4;
  static void add_exit_hook(ExitHook hook) noexcept;
  static void run_exit_hooks() noexcept;

  /// Arrays still queued at `deadline` get statistics and trace lines but no .npy file, so that a
  /// terminated process dies in bounded time; summary.json counts them.
  void stop_files_at(std::chrono::steady_clock::time_point deadline) noexcept;
  /// For the termination-signal watcher, in the process that owns this recorder: notes the signal
  /// in summary.json, stop_files_at(files_deadline), finish().
  static void finish_on_termination(const char* signal, std::chrono::steady_clock::time_point files_deadline) noexcept;

  /// Versions and notes for summary.json (ophook/process/run_facts.hpp); a new run clears the notes.
  RunFacts& facts() noexcept { return *facts_; }
  const RunFacts& facts() const noexcept { return *facts_; }
  /// What the run counts of what it could not record as meant (summary.json's totals); reset by a
  /// new run and in a forked child.
  RunCounters& counters() noexcept { return counters_; }
  const RunCounters& counters() const noexcept { return counters_; }

  /// The rank this process learned after it started (torch.distributed initialised, RANK set by
  /// the program; -1: none), unless it knew one or inherited this one (ProcessRank): exported, and
  /// a child process's pid<PID>/ becomes rank<R>/ (the writer renames it, docs/outputs.md "Where").
  /// finish() looks at RANK once more.
  void learn_rank(long rank);
  /// For the writer: the rank to name the directory after, once (-1: none); then where it is now.
  long take_rank_to_name() noexcept {
    return rank_to_name_.load(std::memory_order_relaxed) < 0 ? -1 : rank_to_name_.exchange(-1);
  }
  void set_output_path(std::string path);

  /// True exactly once per run: the caller reports the first NaN/Inf-producing call.
  bool claim_first_nonfinite_report() noexcept {
    const bool first = !nonfinite_reported_.exchange(true);
    if (first) ring_trigger_pending_.store(true, std::memory_order_relaxed);
    return first;
  }
  /// Whether the first NaN/Inf-producing call has been reported.
  bool nonfinite_reported() const noexcept { return nonfinite_reported_.load(std::memory_order_relaxed); }
  /// Whether the first NaN/Inf's trigger is on its way to the writer, which has not written the
  /// ring yet: meanwhile the bytes the ring holds on devices must stay (docs/devices.md), so new
  /// tensors' bytes go to the host. The writer calls ring_written() once it has.
  bool ring_trigger_pending() const noexcept { return ring_trigger_pending_.load(std::memory_order_relaxed); }
  void ring_written() noexcept { ring_trigger_pending_.store(false, std::memory_order_relaxed); }

  ~Recorder();

 private:
  Recorder();
  void begin_run(const Config& config, WriterThread thread);
  void start_writer(std::string output_path, WriterThread thread);
  bool ensure_writer() noexcept;
  void adopt_rank(long rank, bool export_it);
  void unlock_tables() noexcept;
  void on_fork_prepare() noexcept;
  void on_fork_parent() noexcept;
  void on_fork_child() noexcept;
  std::string child_output_path() const;

  static std::atomic<Recorder*> instance_;
  static std::atomic<ExitHook> exit_hooks_[kExitHooks];

  Config config_;
  mutable std::mutex output_path_mu_;
  std::string output_path_;
  std::string root_output_;  // the root process's directory; children write below it
  std::unique_ptr<OpFilters> filters_;  // this run's (OPHOOK_INCLUDE, _EXCLUDE, _DUMP_INCLUDE)
  InternTable<std::string, OpEntry> ops_;
  InternTable<std::string, std::string> strings_;
  InternTable<std::string, DtypeInfo> dtypes_;
  std::atomic<std::uint64_t> seq_{0};
  RunCounters counters_;
  std::atomic<bool> finished_{false};
  std::atomic<int> owner_pid_{0};
  std::int64_t start_t_ns_ = 0;  // written by begin_run and in the fork child, before any reader
  // When the parent's fork began (on_fork_prepare, forks serialised by writer_mu_): a child's
  // start, so that children order as they were forked, not as the scheduler first ran them.
  std::int64_t fork_t_ns_ = 0;
  int root_pid_ = 0;
  std::atomic<bool> nonfinite_reported_{false};
  std::atomic<bool> ring_trigger_pending_{false};
  std::mutex writer_mu_;
  ProcessRank rank_;  // set by begin_run, then under writer_mu_
  std::atomic<long> rank_to_name_{-1};
  std::atomic<bool> writer_ready_{false};
  std::unique_ptr<RecordQueue> queue_;
  std::unique_ptr<TraceWriter> writer_;
  std::unique_ptr<RunFacts> facts_;
  std::mutex finish_mu_;
};

}  // namespace ophook::core
