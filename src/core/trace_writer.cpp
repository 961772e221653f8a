#include "trace_writer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <future>
#include <system_error>

#include "api_text.hpp"
#include "file_batch.hpp"
#include "ophook/error.hpp"
#include "ophook/log.hpp"
#include "ophook/naming.hpp"
#include "ophook/npy.hpp"
#include "ophook/record_queue.hpp"
#include "ophook/recorder.hpp"
#include "ophook/values.hpp"
#include "record_json.hpp"
#include "termination_signal.hpp"

namespace ophook::core {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(5);
constexpr std::size_t kLineFlushBytes = 1 << 16;
// Disk space set aside at start for summary.json and the api_* files, so that a disk that fills
// up during the run still gets a summary saying so.
constexpr std::size_t kFinalFilesReserve = 256 << 10;
// Array files this large are written by a helper thread while the writer computes the array's
// statistics: the two passes over the data overlap instead of adding up (64 MiB of float64 on the
// bench machine: statistics 45 ms and write() 21 ms of CPU, one after the other before).
constexpr std::size_t kOverlapBytes = std::size_t{8} << 20;
// Records taken from the queue are processed this many at a time: their small files are written
// together on two threads (file_batch.hpp), then the records' lines are emitted and the records
// released, so that the program waiting for room in the queue never waits for a whole batch.
constexpr std::ptrdiff_t kChunkRecords = 64;

/// Marks the outputs and, with `names`, names the files: input k counts the arrays of args then
/// kwargs in order; output k those of outputs (k = 0 when the call returned a single array).
/// Aliases (the same object twice) share their first's role.
void assign_roles(const CallRecord& record, const OpEntry& op, std::vector<ArrayOutcome>& out, bool names) {
  const auto* base = record.values.data();
  unsigned inputs = 0;
  std::vector<std::uint32_t> output_indices;
  auto walk = [&](std::uint32_t from, std::uint32_t to, auto&& on_array) {
    ValueReader r(base + from, base + to);
    while (!r.done()) {
      const auto token = r.next();
      if (token.tag == ValueTag::Array && record.arrays[token.index].alias_of < 0) on_array(token.index);
    }
  };
  if (names) {
    walk(0, record.outputs_offset, [&](std::uint32_t i) {
      out[i].file = input_file_name(op.file_stem, ++inputs, record.seq);
    });
  }
  walk(record.outputs_offset, static_cast<std::uint32_t>(record.values.size()),
       [&](std::uint32_t i) { output_indices.push_back(i); });
  for (std::size_t k = 0; k < output_indices.size(); ++k) {
    auto& o = out[output_indices[k]];
    o.is_output = true;
    if (names) o.file = output_file_name(op.file_stem, output_indices.size() == 1 ? 0 : unsigned(k + 1), record.seq);
  }
}

/// Writes `parts` into `file` and runs add_stats() over the same (read-only) data, at the same
/// time for a large array.
template <typename AddStats>
IoResult write_file_with_stats(OutputDir& dir, const std::string& file,
                               std::span<const std::span<const std::byte>> parts, AddStats&& add_stats) {
  if (parts.back().size() >= kOverlapBytes) {
    std::future<IoResult> written;
    try {
      written = std::async(std::launch::async, [&] { return dir.write_file(file, parts); });
    } catch (const std::system_error&) {
      // No thread to be had: one pass after the other, below.
    }
    if (written.valid()) {
      add_stats();
      return written.get();
    }
  }
  add_stats();
  return dir.write_file(file, parts);
}

}  // namespace

TraceWriter::TraceWriter(Recorder& recorder, RecordQueue& queue, std::string output_path, bool nested,
                         WriterThread thread)
    : recorder_(recorder),
      queue_(queue),
      dir_(std::move(output_path), nested ? OutputDir::Leaf::NoFollow : OutputDir::Leaf::Follow),
      files_(dir_, thread == WriterThread::Start),
      record_json_(recorder),
      summary_(recorder),
      inline_(thread == WriterThread::Inline) {
  dir_.remove_previous_run_files();
  trace_fd_ = dir_.open_fresh_for_append("trace.jsonl");
  if (trace_fd_ < 0) throw Error("cannot create " + dir_.path() + "/trace.jsonl: " + std::strerror(errno));
  api_fd_ = dir_.open_fresh_for_append("api_trace.txt");
  if (api_fd_ < 0) {
    api_failed_ = true;
    file_failed("api_trace.txt", errno);
  }
  if (inline_) return;
  arm_termination_signals(&Recorder::finish_on_termination);
  // The thread never runs Python and must not take the program's signals (SIGINT → the main
  // thread's KeyboardInterrupt).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TraceWriter::~TraceWriter() {
  if (thread_.joinable()) thread_.join();
  if (trace_fd_ >= 0) ::close(trace_fd_);
  if (api_fd_ >= 0) ::close(api_fd_);
}

void TraceWriter::abandon_after_fork() {
  // The std::thread object refers to a thread of the parent; detaching a non-existent thread is
  // harmless, joining it would hang.
  thread_.detach();
  files_.abandon_after_fork();
  trace_fd_ = api_fd_ = -1;  // the parent's descriptors: leave them to the parent
}

void TraceWriter::finish(std::uint64_t dropped, std::uint64_t producer_waits) {
  final_dropped_ = dropped, final_waits_ = producer_waits;  // published to the thread by close()
  queue_.close();
  if (thread_.joinable()) {
    thread_.join();
  } else if (inline_) {
    run();
  }
}

void TraceWriter::run() noexcept {
  // Room for the final files should the disk fill while recording; nothing records inline.
  if (!inline_) dir_.reserve_space(kFinalFilesReserve);
  std::deque<RecordPtr> batch;
  while (queue_.pop_all(batch, kPoll)) {
    for (auto first = batch.begin(); first != batch.end();) {
      const auto last = batch.end() - first > kChunkRecords ? first + kChunkRecords : batch.end();
      process_chunk(first, last);
      first = last;
    }
    batch.clear();
    flush_lines();
  }
  files_.stop();
  write_final_files();
}

void TraceWriter::process_chunk(const std::deque<RecordPtr>::iterator& first,
                                const std::deque<RecordPtr>::iterator& last) noexcept {
  const auto n = static_cast<std::size_t>(last - first);
  if (chunk_outcomes_.size() < n) chunk_outcomes_.resize(n);
  prepared_.resize(n);
  file_jobs_.clear();
  auto outcomes = chunk_outcomes_.begin();
  auto prepared = prepared_.begin();
  for (auto it = first; it != last; ++it) *prepared++ = prepare(**it, *outcomes++);
  files_.write_all(file_jobs_);
  settle_file_jobs();
  outcomes = chunk_outcomes_.begin();
  prepared = prepared_.begin();
  for (auto it = first; it != last; ++it, ++outcomes) {
    if (*prepared++) finish_record(**it, *outcomes);
    queue_.release(std::move(*it));  // recycled for the program's next calls
  }
}

void TraceWriter::write_final_files() noexcept {
  emit_all_pending();
  flush_lines();
  dir_.release_reserve();
  try {
    summary_.write_files(dir_, final_dropped_, final_waits_);
  } catch (const std::exception& e) {
    logger().error("cannot write the summary files into {}: {}", dir_.path(), e.what());
  }
}

bool TraceWriter::prepare(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) noexcept {
  try {
    const auto& op = recorder_.op(record.op_id);
    outcomes.resize(record.arrays.size());
    for (auto& o : outcomes) o.file.clear(), o.stats.reset(), o.is_output = false;
    // Roles only matter for NaN statistics, names only for files: trace mode has neither, stats
    // mode no files (the names' formatting was a fifth of the writer's time per record).
    const auto mode = recorder_.config().mode;
    if (mode == Mode::Trace) return true;  // no statistics and no files: nothing to save
    assign_roles(record, op, outcomes, mode == Mode::Dump);
    save_arrays(record, outcomes);
    return true;
  } catch (const std::exception& e) {
    record_failed(record, e);
    return false;
  }
}

void TraceWriter::settle_file_jobs() noexcept {
  for (auto& job : file_jobs_) {
    if (job.result.ok && job.attempted) continue;
    summary_.uncount_file(job.header.size() + job.data.size());
    if (job.attempted) file_failed(job.outcome->file, job.result.error);
    job.outcome->file.clear();
  }
}

void TraceWriter::finish_record(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) noexcept {
  try {
    for (std::size_t i = 0; i < record.arrays.size(); ++i) {
      const auto first = record.arrays[i].alias_of;
      if (first >= 0) outcomes[i] = outcomes[static_cast<std::size_t>(first)];
    }
    summary_.observe(record, outcomes);
    const auto api_line = format_lines(record, outcomes);
    emit_in_order(record.seq, line_.view(), api_line);
  } catch (const std::exception& e) {
    record_failed(record, e);
  }
}

std::string_view TraceWriter::format_lines(const CallRecord& record, const std::vector<ArrayOutcome>& outcomes) {
  line_.clear();
  record_json_.append_head(line_, record);
  // Files and statistics differ from call to call: such records are formatted anew.
  const bool cacheable =
      std::all_of(outcomes.begin(), outcomes.end(), [](const ArrayOutcome& o) { return o.file.empty() && !o.stats; });
  if (const auto* texts = cacheable ? call_texts_.find(record) : nullptr) {
    line_.append(texts->trace_call);
    record_json_.append_tail(line_, record);
    return texts->api_line;  // observed by the summary when it was stored (observing is idempotent)
  }
  const auto call_begin = line_.view().size();
  record_json_.append_call(line_, record, outcomes);
  api_line_.clear();
  append_api_call_text(api_line_, record, recorder_);
  summary_.observe_config(api_line_);
  if (cacheable) call_texts_.remember(line_.view().substr(call_begin), api_line_);
  record_json_.append_tail(line_, record);
  return api_line_;
}

void TraceWriter::record_failed(const CallRecord& record, const std::exception& e) noexcept {
  logger().error("could not record call {}: {}", record.seq, e.what());
  summary_.count_record_error();
}

void TraceWriter::save_arrays(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) {
  const auto mode = recorder_.config().mode;
  for (std::size_t i = 0; i < record.arrays.size(); ++i) {
    const auto& array = record.arrays[i];
    auto& outcome = outcomes[i];
    if (array.alias_of >= 0) continue;  // shares its first's outcome, once its file is settled
    const auto& dtype = recorder_.dtype(array.dtype_id);
    const bool has_data = array.captured && !dtype.descr.empty();
    auto add_stats = [&] {
      if (mode == Mode::Trace) return;
      if (has_data) {
        outcome.stats = compute_stats(dtype.descr, array.data.get(), array.nbytes);
      } else if (array.given_stats) {
        outcome.stats = array.given_stats;  // computed on the tensor's device
      }
    };
    bool write = mode == Mode::Dump && has_data && !files_failed_;
    if (write && files_deadline_passed()) {
      write = false;
      summary_.count_unwritten_at_termination();
    }
    if (!write) {
      add_stats();
      outcome.file.clear();
      continue;
    }
    auto header = encode_npy_header(dtype.descr, array.shape);
    const auto size = header.size() + array.nbytes;
    if (!summary_.budget_allows(size, record.seq)) {
      add_stats();
      outcome.file.clear();
      continue;
    }
    summary_.count_file(size);  // taken back by settle_file_jobs if the file is not written
    const std::span<const std::byte> data(array.data.get(), array.nbytes);
    if (array.nbytes < kOverlapBytes) {
      add_stats();
      file_jobs_.push_back({&outcome, std::move(header), data, {}, false});
      continue;
    }
    const std::span<const std::byte> parts[] = {
        {reinterpret_cast<const std::byte*>(header.data()), header.size()}, data};
    const auto result = write_file_with_stats(dir_, outcome.file, parts, add_stats);
    if (!result.ok) {
      summary_.uncount_file(size);
      file_failed(outcome.file, result.error);
      outcome.file.clear();
    }
  }
}

void TraceWriter::emit_in_order(std::uint64_t seq, std::string_view line, std::string_view api_line) noexcept {
  if (seq != next_seq_) {
    pending_.emplace(seq, std::make_pair(std::string(line), std::string(api_line)));
    return;
  }
  buffer_lines(line, api_line);
  ++next_seq_;
  while (!pending_.empty() && pending_.begin()->first == next_seq_) {
    auto node = pending_.extract(pending_.begin());
    buffer_lines(node.mapped().first, node.mapped().second);
    ++next_seq_;
  }
  if (trace_buffer_.view().size() > kLineFlushBytes) flush_lines();
}

void TraceWriter::emit_all_pending() noexcept {
  // Calls that never finished (a thread still inside one at exit) leave gaps: write the rest.
  for (auto& [seq, lines] : pending_) buffer_lines(lines.first, lines.second);
  pending_.clear();
}

void TraceWriter::buffer_lines(std::string_view line, std::string_view api_line) noexcept {
  trace_buffer_.append(line), trace_buffer_.push_back('\n');
  api_buffer_.append(api_line), api_buffer_.push_back('\n');
}

void TraceWriter::flush_lines() noexcept {
  append(trace_fd_, trace_buffer_, trace_failed_, "trace.jsonl");
  append(api_fd_, api_buffer_, api_failed_, "api_trace.txt");
}

void TraceWriter::append(int fd, LineBuffer& buffer, bool& failed, const char* what) noexcept {
  const auto text = buffer.view();
  if (text.empty()) return;
  std::size_t done = 0;
  while (!failed && done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = true;
      const int error = n < 0 ? errno : EIO;
      summary_.count_write_error(what, error);
      summary_.note_stopped(what, std::strerror(error));
      logger().error("cannot write {}/{}: {}: no more lines are added to it", dir_.path(), what,
                     std::strerror(error));
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  buffer.clear();
}

bool TraceWriter::files_deadline_passed() noexcept {
  const auto deadline = files_deadline_.load(std::memory_order_relaxed);
  if (deadline == kNoDeadline) return false;
  if (!past_files_deadline_) {
    if (std::chrono::steady_clock::now().time_since_epoch().count() < deadline) return false;
    past_files_deadline_ = true;
    const auto reason = fmt::format("the {} s allowed for files after a termination signal passed: the arrays "
                                    "still queued get statistics but no file", kTerminationFilesMs / 1000);
    summary_.note_stopped(".npy files", reason);
    logger().warn("{}: {}", dir_.path(), reason);
  }
  return true;
}

void TraceWriter::file_failed(const std::string& name, int error) noexcept {
  const bool first = summary_.count_write_error(name, error);
  if (name.ends_with(".npy") && !error_concerns_one_file(error)) {
    if (files_failed_) return;  // the other file thread's file of the same batch, failing alike
    files_failed_ = true;
    summary_.note_stopped(".npy files", name + ": " + std::strerror(error));
    logger().error("cannot write {}/{}: {}: no more .npy files, trace.jsonl and statistics go on",
                   dir_.path(), name, std::strerror(error));
  } else if (first) {
    logger().error("cannot write {}/{}: {}: this file is skipped (the first such error; summary.json counts them all)",
                   dir_.path(), name, std::strerror(error));
  }
}

}  // namespace ophook::core
