#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "files/content_index.hpp"
#include "files/file_batch.hpp"
#include "files/file_threads.hpp"
#include "ophook/files/output_dir.hpp"
#include "ophook/model/record.hpp"
#include "writer/array_outcome.hpp"

namespace ophook::core {

class Recorder;
class RunSummary;

/// The .npy files of dump mode, made from calls' captured arrays: within OPHOOK_MAX_BYTES (bytes
/// actually written), content stored once — an array whose file would equal a file this process
/// wrote already becomes a hard link to it (ContentIndex nominates the file, OutputDir::link_copy
/// compares the bytes and links; where hard links are refused the file is written). The arrays of
/// a batch of calls are planned in order and their passes over the data — the index's digest, the
/// statistics, the file or the comparison — run on the writer and its helper threads at once
/// (FileThreads). A failure of the medium stops the files for the rest of the run, with one line
/// on stderr and the reason in summary.json. Writer thread only, except stop_at().
class ArrayFiles {
 public:
  /// `helpers`: how many helper threads FileThreads may start. `digest`: for tests.
  ArrayFiles(OutputDir& dir, const Recorder& recorder, RunSummary& summary, unsigned helpers,
             DigestFunction digest = xxh3_128_digest);

  /// Without `files`, computes the statistics of `record`'s captured arrays that have none yet.
  /// With `files`, queues the arrays whose outcome is named for write_planned(), which gives them
  /// their statistics and files; the others get their statistics now. An array that gets no file
  /// loses its name, and says why in no_file when that is the budget or the termination deadline.
  /// `record` and `outcomes` must stay put until write_planned() returns.
  void add(const CallRecord& record, std::vector<ArrayOutcome>& outcomes, bool files);
  /// Plans the queued arrays in order (a file, or a link to a file written before, this batch's
  /// included), then writes the files and computes their statistics, then makes the links; a link
  /// that cannot be made becomes a written file. Failures are reported and lose their names.
  /// Returns when every queued array has its statistics and its file is done.
  void write_planned() noexcept;

  /// Whether a file could still be written now (the medium has not failed, budget left).
  bool open() const noexcept;
  /// For a call whose arrays would have had files but for the budget: each captured array says
  /// so in no_file (no names are made for them).
  void note_budget_spent(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) const noexcept;
  /// Arrays planned after `deadline` get statistics but no file (a terminated process dies in
  /// bounded time); summary.json counts them. Any thread.
  void stop_at(std::chrono::steady_clock::time_point deadline) noexcept {
    deadline_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
  }
  void stop() noexcept { threads_.stop(); }  // ends the helper threads
  void abandon_after_fork() noexcept { threads_.abandon_after_fork(); }

  /// summary.json's "store_once": whether links are made, the content index's entries.
  nlohmann::ordered_json store_once_json() const;

 private:
  /// An array on its way to a file: queued by add(), then planned as a write or a link.
  struct PlannedFile {
    FileJob job;
    const CallRecord* record;  // for the budget's warning
    const ArrayCapture* array;
    const std::string* descr;
    ContentDigest digest;
    bool narrow = false;  // its copy widens on first read (SharedCopy::widens): job.data set by widen_queued()
  };
  /// One job of a pass over the planned files (make_files).
  struct Work {
    // A large array's statistics and file are two jobs (StatsOfWrite and Write), which other
    // threads may run at once; a small one's are one job, its bytes still in the cache for the file.
    enum class Kind : std::uint8_t { Write, StatsThenWrite, StatsOfWrite, StatsOnly } kind;
    std::size_t index;  // into writes_, or stats_only_ for StatsOnly
  };
  /// An array that gets no file after all (the budget spent, or the medium failed) and whose
  /// statistics are computed in the next pass.
  struct StatsOnly {
    ArrayOutcome* outcome;
    const ArrayCapture* array;
    const std::string* descr;
  };

  void widen_queued() noexcept;  // the queued narrow copies, all at once
  void take_digests() noexcept;  // of the queued arrays, all at once
  void plan_queued() noexcept;   // in order: each a link, a write or no file
  /// Plans `planned` as a written file within the budget; false (name cleared) when it does not fit.
  bool plan_write(PlannedFile&& planned);
  void make_files() noexcept;  // the planned writes and the pending statistics, all at once
  void make_links() noexcept;
  void settle_writes() noexcept;  // failures counted and reported, their names cleared
  void settle_links() noexcept;   // links counted; the ones not made planned as writes
  void unwritten(ArrayOutcome& outcome, std::uint64_t bytes, const ContentDigest& digest, int error) noexcept;
  void refuse_links(int error) noexcept;
  void file_failed(const std::string& name, int error) noexcept;
  bool deadline_passed() noexcept;

  OutputDir& dir_;
  const Recorder& recorder_;
  RunSummary& summary_;
  FileThreads threads_;
  ContentIndex index_;
  bool links_on_ = true;
  int links_refused_ = 0;  // errno of the refusal that turned links off, 0 if none
  bool failed_ = false;    // the medium failed: no more files
  std::vector<PlannedFile> queued_, writes_, links_;
  std::vector<StatsOnly> stats_only_;
  std::vector<Work> work_;
  std::atomic<bool> medium_failed_{false};  // a file of this pass failed for the medium: stop
  static constexpr auto kNoDeadline = std::numeric_limits<std::chrono::steady_clock::rep>::max();
  std::atomic<std::chrono::steady_clock::rep> deadline_{kNoDeadline};
  bool past_deadline_ = false;
};

}  // namespace ophook::core
