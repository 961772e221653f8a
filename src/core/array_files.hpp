#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "array_outcome.hpp"
#include "content_index.hpp"
#include "file_batch.hpp"
#include "ophook/output_dir.hpp"
#include "ophook/record.hpp"

namespace ophook::core {

class Recorder;
class RunSummary;

/// The .npy files of dump mode, made from calls' captured arrays: within OPHOOK_MAX_BYTES (bytes
/// actually written), content stored once — an array whose file would equal a file this process
/// wrote already becomes a hard link to it (ContentIndex nominates the file, OutputDir::link_copy
/// compares the bytes and links; where hard links are refused the file is written) — small files
/// written on the writer and a helper thread at once (FileBatchWriter), large ones while their
/// statistics are computed. A failure of the medium stops the files for the rest of the run, with
/// one line on stderr and the reason in summary.json. Writer thread only, except stop_at().
class ArrayFiles {
 public:
  /// `helper_thread`: whether FileBatchWriter may start its helper. `digest`: for tests.
  ArrayFiles(OutputDir& dir, const Recorder& recorder, RunSummary& summary, bool helper_thread,
             DigestFunction digest = xxh3_128_digest);

  /// Computes the statistics of `record`'s captured arrays that have none yet and, with `files`,
  /// plans the files of those whose outcome is named (large ones are written at once, overlapped
  /// with their statistics). An array that gets no file loses its name, and says why in no_file
  /// when that is the budget or the termination deadline. `record` and `outcomes` must stay put
  /// until write_planned() returns.
  void add(const CallRecord& record, std::vector<ArrayOutcome>& outcomes, bool files);
  /// Writes the planned files, then makes the planned links (to files written before, this batch's
  /// included); a link that cannot be made becomes a written file. Failures are reported and lose
  /// their names. Returns when everything planned is done.
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
  void stop() noexcept { batch_.stop(); }  // ends the helper thread
  void abandon_after_fork() noexcept { batch_.abandon_after_fork(); }

  /// summary.json's "store_once": whether links are made, the content index's entries.
  nlohmann::ordered_json store_once_json() const;

 private:
  struct Planned {
    const CallRecord* record;  // for the budget's warning should a link become a write
    ContentDigest digest;
    const std::string* descr = nullptr;  // set when the statistics are the first file's, to be
                                         // computed after all should the bytes differ
  };
  template <typename AddStats>
  void plan_file(const CallRecord& record, const ArrayCapture& array, const std::string& descr, ArrayOutcome& outcome,
                 AddStats&& add_stats);
  /// Plans `job` as a written file within the budget; false (name cleared) when it does not fit.
  bool plan_write(FileJob&& job, const Planned& planned);
  void settle_writes() noexcept;  // failures counted and reported, their names cleared
  void settle_links() noexcept;   // links counted; the ones not made planned as writes
  void unwritten(ArrayOutcome& outcome, std::uint64_t bytes, const ContentDigest& digest, int error) noexcept;
  void refuse_links(int error) noexcept;
  void file_failed(const std::string& name, int error) noexcept;
  bool deadline_passed() noexcept;

  OutputDir& dir_;
  const Recorder& recorder_;
  RunSummary& summary_;
  FileBatchWriter batch_;
  ContentIndex index_;
  bool links_on_ = true;
  int links_refused_ = 0;  // errno of the refusal that turned links off, 0 if none
  bool failed_ = false;    // the medium failed: no more files
  std::vector<FileJob> writes_, links_;
  std::vector<Planned> write_plans_, link_plans_;  // indexed like writes_ and links_
  static constexpr auto kNoDeadline = std::numeric_limits<std::chrono::steady_clock::rep>::max();
  std::atomic<std::chrono::steady_clock::rep> deadline_{kNoDeadline};
  bool past_deadline_ = false;
};

}  // namespace ophook::core
