#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "array_outcome.hpp"
#include "call_text_cache.hpp"
#include "file_batch.hpp"
#include "ophook/output_dir.hpp"
#include "ophook/record.hpp"
#include "ophook/writer_thread.hpp"
#include "record_json.hpp"
#include "run_summary.hpp"

namespace ophook::core {

class Recorder;
class RecordQueue;

/// The writer thread: takes records from the queue, writes their .npy files (dump mode, within the
/// byte budget), computes statistics, and appends trace.jsonl and api_trace.txt lines in seq order.
/// At the end it writes summary.json and the other api_* files, on this thread too: it blocks every
/// signal, so a write beyond RLIMIT_FSIZE fails with EFBIG instead of killing the program with
/// SIGXFSZ. A failed write never reaches the program: it gets one line on stderr and an entry in
/// summary.json; a failure of the medium (disk full, size limit, read-only, permission) stops that
/// kind of output for the rest of the run instead of retrying.
class TraceWriter {
 public:
  /// Opens the output directory (throws ophook::Error naming it when unusable), removes the named
  /// files of an earlier run, and starts the thread (unless `thread` is Inline).
  /// `nested`: a child's pid<PID>/rank<R> directory below the root's, never reached through a
  /// symlink planted at that name.
  TraceWriter(Recorder& recorder, RecordQueue& queue, std::string output_path, bool nested = false,
              WriterThread thread = WriterThread::Start);
  ~TraceWriter();

  /// Lets the thread drain the queue, write the end-of-process files and exit; waits for it
  /// (Inline: does that work itself).
  void finish(std::uint64_t dropped, std::uint64_t producer_waits);

  /// See Recorder::stop_files_at. Any thread.
  void stop_files_at(std::chrono::steady_clock::time_point deadline) noexcept {
    files_deadline_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
  }

  /// For the child after fork(): the thread does not exist there; forget it without joining.
  void abandon_after_fork();

 private:
  void run() noexcept;
  void write_final_files() noexcept;
  /// Records [first, last) of a batch taken from the queue, released once done.
  void process_chunk(const std::deque<RecordPtr>::iterator& first,
                     const std::deque<RecordPtr>::iterator& last) noexcept;
  /// Names, statistics and the files: large ones written now, small ones queued in file_jobs_.
  /// False when the record cannot be recorded (logged and counted).
  bool prepare(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) noexcept;
  void save_arrays(const CallRecord& record, std::vector<ArrayOutcome>& outcomes);
  void settle_file_jobs() noexcept;  // failures counted and reported, their names cleared
  /// Aliases given their first's outcome; the summary, the lines.
  void finish_record(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) noexcept;
  /// The record's trace line into line_ and its API line (in api_line_ or the cache): what was
  /// called from the cache when this call was formatted before.
  std::string_view format_lines(const CallRecord& record, const std::vector<ArrayOutcome>& outcomes);
  void record_failed(const CallRecord& record, const std::exception& e) noexcept;
  void emit_in_order(std::uint64_t seq, std::string_view line, std::string_view api_line) noexcept;
  void emit_all_pending() noexcept;
  void buffer_lines(std::string_view line, std::string_view api_line) noexcept;
  void flush_lines() noexcept;
  void append(int fd, LineBuffer& buffer, bool& failed, const char* what) noexcept;
  void file_failed(const std::string& name, int error) noexcept;
  bool files_deadline_passed() noexcept;

  Recorder& recorder_;
  RecordQueue& queue_;
  OutputDir dir_;
  int trace_fd_ = -1;
  int api_fd_ = -1;
  bool trace_failed_ = false, api_failed_ = false, files_failed_ = false;
  static constexpr auto kNoDeadline = std::numeric_limits<std::chrono::steady_clock::rep>::max();
  std::atomic<std::chrono::steady_clock::rep> files_deadline_{kNoDeadline};
  bool past_files_deadline_ = false;
  LineBuffer trace_buffer_, api_buffer_;  // lines in seq order, not yet written
  // Reused for every record, so that formatting a record allocates nothing.
  LineBuffer line_;
  std::string api_line_;
  std::vector<std::vector<ArrayOutcome>> chunk_outcomes_;  // per record of the chunk
  std::vector<char> prepared_;  // per record of the chunk: prepare() succeeded
  std::vector<FileJob> file_jobs_;
  FileBatchWriter files_;  // after dir_, which it writes into
  RecordJson record_json_;
  CallTextCache call_texts_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t final_dropped_ = 0, final_waits_ = 0;  // set by finish() before the queue closes
  std::map<std::uint64_t, std::pair<std::string, std::string>> pending_;  // seq → lines
  RunSummary summary_;
  bool inline_ = false;
  std::thread thread_;
};

}  // namespace ophook::core
