#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "files/array_files.hpp"
#include "lines/call_text_cache.hpp"
#include "lines/record_json.hpp"
#include "lines/trace_lines.hpp"
#include "ophook/files/output_dir.hpp"
#include "ophook/model/record.hpp"
#include "ophook/writer/writer_thread.hpp"
#include "writer/array_outcome.hpp"
#include "writer/array_ring.hpp"
#include "writer/run_summary.hpp"

namespace ophook::core {

class Recorder;
class RecordQueue;

/// The writer thread: takes records from the queue, computes statistics, has their .npy files
/// written (dump mode: ArrayFiles) or holds them in the ring (OPHOOK_RING_BYTES: ArrayRing, written
/// on a trigger), and appends trace.jsonl and api_trace.txt lines in seq order (TraceLines). At the
/// end it writes summary.json and the other api_* files, on this thread too: it blocks every
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
  void finish(std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits);

  /// See Recorder::stop_files_at. Any thread.
  void stop_files_at(std::chrono::steady_clock::time_point deadline) noexcept { files_.stop_at(deadline); }
  /// The run's end is a trigger of the ring (a termination signal): its calls are written then,
  /// `why` noted. Call before finish().
  void dump_ring_at_end(std::string why) { end_trigger_ = std::move(why); }

  /// For the child after fork(): the thread does not exist there; forget it without joining.
  void abandon_after_fork();

 private:
  void run() noexcept;
  void write_final_files() noexcept;
  /// Names the directory after the rank the process learned since it started (Recorder::learn_rank).
  void rename_for_rank() noexcept;
  /// Records [first, last) of a batch taken from the queue, released once done (or held).
  void process_chunk(const std::deque<RecordPtr>::iterator& first,
                     const std::deque<RecordPtr>::iterator& last) noexcept;
  /// Names, statistics and the files (planned, or held by the ring with `held`). False when the
  /// record cannot be recorded (logged and counted).
  bool prepare(const CallRecord& record, std::vector<ArrayOutcome>& outcomes, bool& held) noexcept;
  /// Moves a prepared record into the ring, evicting the oldest calls to make room, and the ones
  /// that hold more trace lines back than the ring has room for.
  void hold(RecordPtr& record, std::vector<ArrayOutcome>& outcomes) noexcept;
  /// The oldest held call leaves the ring unwritten.
  void evict_oldest() noexcept;
  /// Writes every held call's files, then its lines.
  void dump_ring(std::string why) noexcept;
  /// Brings the bytes `call`'s arrays hold on their device to the host for their files; an array
  /// whose bytes are gone there gets no file and says why. Returns the bytes fetched.
  std::uint64_t fetch_held_on_device(ArrayRing::HeldCall& call) noexcept;
  /// A call that leaves the ring unwritten: its lines say why.
  void release_unwritten(ArrayRing::HeldCall& call, NoFileReason reason) noexcept;
  /// Aliases given their first's outcome; the summary, the lines.
  void finish_record(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) noexcept;
  /// The record's trace line into line_ and its API line (in api_line_ or the cache): what was
  /// called from the cache when this call was formatted before.
  std::string_view format_lines(const CallRecord& record, const std::vector<ArrayOutcome>& outcomes);
  void record_failed(const CallRecord& record, const std::exception& e) noexcept;

  Recorder& recorder_;
  RecordQueue& queue_;
  OutputDir dir_;
  RunSummary summary_;
  TraceLines lines_;  // after dir_ and summary_, which it reports through
  ArrayFiles files_;
  ArrayRing ring_;
  bool nan_triggered_ = false;  // the first fresh NaN/Inf has written the ring
  std::uint64_t last_seq_ = 0;  // the highest seq processed: when a trigger came
  std::string end_trigger_;     // set by dump_ring_at_end(), published by the queue's close()
  // Reused for every record, so that formatting a record allocates nothing.
  LineBuffer line_;
  std::string api_line_;
  std::vector<std::vector<ArrayOutcome>> chunk_outcomes_;  // per record of the chunk
  std::vector<char> prepared_;  // per record of the chunk: prepare() succeeded
  RecordJson record_json_;
  CallTextCache call_texts_;
  // Set by finish() before the queue closes.
  std::uint64_t final_dropped_ = 0;
  RecordQueue::ProducerWaits final_waits_;
  bool inline_ = false;
  std::thread thread_;
};

}  // namespace ophook::core
