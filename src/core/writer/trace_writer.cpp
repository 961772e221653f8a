#include "writer/trace_writer.hpp"

#include <signal.h>

#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "files/rank_directory.hpp"
#include "lines/api_text.hpp"
#include "ophook/capture/thread_clock.hpp"
#include "ophook/files/naming.hpp"
#include "ophook/log.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/model/record_queue.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "process/termination_signal.hpp"

namespace ophook::core {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(5);
// Disk space set aside at start for summary.json and the api_* files, so that a disk that fills
// up during the run still gets a summary saying so.
constexpr std::size_t kFinalFilesReserve = 256 << 10;
// Records taken from the queue are processed this many at a time: their arrays' statistics and
// files are made together on the writer's file threads (array_files.hpp), then the records' lines
// are emitted and the records released, so that the program waiting for room in the queue never
// waits for a whole batch.
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

bool names_a_file(const std::vector<ArrayOutcome>& outcomes) {
  return std::any_of(outcomes.begin(), outcomes.end(), [](const ArrayOutcome& o) { return !o.file.empty(); });
}

// The earlier run's files go before this run's trace.jsonl is opened in the same directory.
OutputDir& cleared(OutputDir& dir) {
  dir.remove_previous_run_files();
  return dir;
}

}  // namespace

TraceWriter::TraceWriter(Recorder& recorder, RecordQueue& queue, std::string output_path, bool nested,
                         WriterThread thread)
    : recorder_(recorder),
      queue_(queue),
      dir_(std::move(output_path), nested ? OutputDir::Leaf::NoFollow : OutputDir::Leaf::Follow),
      summary_(recorder),
      lines_(cleared(dir_), summary_),
      files_(dir_, recorder, summary_, thread == WriterThread::Start ? FileThreads::default_helpers(recorder.config().test.file_helpers) : 0),
      ring_(uses_ring(recorder.config()) ? recorder.config().ring_bytes : 0, recorder.config().ring_for_nan_hunt,
            recorder.config().ring_steps),
      record_json_(recorder),
      inline_(thread == WriterThread::Inline) {
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
}

void TraceWriter::abandon_after_fork() {
  // The std::thread object refers to a thread of the parent; detaching a non-existent thread is
  // harmless, joining it would hang. A finished run's thread was joined already: nothing to let go
  // (detach would throw, and the child abort).
  if (thread_.joinable()) thread_.detach();
  files_.abandon_after_fork();
  lines_.abandon_after_fork();
}

void TraceWriter::finish(std::uint64_t dropped, RecordQueue::ProducerWaits producer_waits) {
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
    lines_.flush();
    rename_for_rank();
  }
  write_final_files();
  files_.stop();
}

void TraceWriter::process_chunk(const std::deque<RecordPtr>::iterator& first,
                                const std::deque<RecordPtr>::iterator& last) noexcept {
  const auto n = static_cast<std::size_t>(last - first);
  if (chunk_outcomes_.size() < n) chunk_outcomes_.resize(n);
  prepared_.resize(n);
  auto outcomes = chunk_outcomes_.begin();
  auto prepared = prepared_.begin();
  for (auto it = first; it != last; ++it, ++outcomes, ++prepared) {
    auto& record = *it;
    *prepared = false;
    if (record->ring_trigger) {
      if (ring_.on()) dump_ring(record->error);
      continue;
    }
    bool held = false;
    *prepared = prepare(*record, *outcomes, held);
    last_seq_ = std::max(last_seq_, record->seq);
    const bool received = record->collective.received_nonfinite;
    const bool nan_trigger = ring_.on() && (record->nonfinite_new || received) && !nan_triggered_;
    const auto seq = record->seq;
    const auto op_id = record->op_id;
    const auto queued = record->queued_bytes;
    if (held) hold(record, *outcomes);
    if (nan_trigger) {
      nan_triggered_ = true;
      dump_ring(fmt::format("first NaN/Inf {}: call {} ({})", received ? "received from another rank" : "from finite inputs",
                            seq, recorder_.op(op_id).name));
    }
    // After the trigger: a flush waiting for the culprit returns once its files are on disk.
    if (record == nullptr) queue_.release(queued, 1);
  }
  files_.write_planned();
  outcomes = chunk_outcomes_.begin();
  prepared = prepared_.begin();
  for (auto it = first; it != last; ++it, ++outcomes, ++prepared) {
    if (*it == nullptr) continue;  // held by the ring
    if (*prepared) finish_record(**it, *outcomes);
    queue_.release(std::move(*it));  // recycled for the program's next calls
  }
}

bool TraceWriter::prepare(const CallRecord& record, std::vector<ArrayOutcome>& outcomes, bool& held) noexcept {
  try {
    const auto& op = recorder_.op(record.op_id);
    outcomes.resize(record.arrays.size());
    for (auto& o : outcomes) o = ArrayOutcome{};
    // Roles only matter for NaN statistics, names only for files: trace mode has neither, stats
    // mode no files (the names' formatting was a fifth of the writer's time per record).
    if (recorder_.config().mode == Mode::Trace) return true;  // no statistics and no files: nothing to save
    const bool files = op.dumped && files_.open();
    assign_roles(record, op, outcomes, files);
    if (op.dumped && !files) files_.note_budget_spent(record, outcomes);
    // The ring holds a call whose arrays would get files; their statistics are needed now.
    held = ring_.on() && names_a_file(outcomes);
    files_.add(record, outcomes, /*files=*/!held);
    return true;
  } catch (const std::exception& e) {
    record_failed(record, e);
    held = false;
    return false;
  }
}

void TraceWriter::hold(RecordPtr& record, std::vector<ArrayOutcome>& outcomes) noexcept {
  ArrayRing::HeldCall call{std::move(record), std::move(outcomes), 0};
  call.bytes = call.record->footprint();
  if (ring_.too_large(call)) return release_unwritten(call, NoFileReason::RingTooLarge);
  while (!ring_.empty() && ring_.over(call.bytes)) evict_oldest();  // room first: never more than its bytes
  const std::uint64_t step = call.record->step;
  while (!ring_.empty() && ring_.before_window(step)) evict_oldest();  // OPHOOK_RING_STEPS
  try {
    ring_.hold(std::move(call));
  } catch (const std::exception& e) {  // no memory for the ring's bookkeeping: the call's line is lost
    record_failed(*call.record, e);
    RecordPool::give(std::move(call.record));
    return;
  }
  // Lines wait behind the oldest held call when it is the next one due in trace.jsonl; they
  // count against the ring, whose window they lag by.
  while (!ring_.empty() && ring_.over(lines_.waiting_bytes()) && ring_.oldest().seq <= lines_.next_seq()) {
    evict_oldest();
  }
}

void TraceWriter::evict_oldest() noexcept {
  auto call = ring_.evict_oldest();
  release_unwritten(call, NoFileReason::RingEvicted);
}

void TraceWriter::dump_ring(std::string why) noexcept {
  for (auto& call : ring_.take_stale()) release_unwritten(call, NoFileReason::RingEvicted);  // OPHOOK_RING_STEPS
  auto calls = ring_.take_for_trigger(std::move(why), last_seq_, monotonic_ns());
  std::uint64_t bytes_from_device = 0;
  for (auto& call : calls) {
    bytes_from_device += fetch_held_on_device(call);
    try {
      files_.add(*call.record, call.outcomes, /*files=*/true);
    } catch (const std::exception& e) {
      record_failed(*call.record, e);
      for (auto& o : call.outcomes) o.file.clear();
    }
  }
  files_.write_planned();
  std::uint64_t files = 0;
  for (auto& call : calls) {
    files += static_cast<std::uint64_t>(
        std::count_if(call.outcomes.begin(), call.outcomes.end(), [](const ArrayOutcome& o) { return !o.file.empty(); }));
    finish_record(*call.record, call.outcomes);
    RecordPool::give(std::move(call.record));
  }
  ring_.note_written(files, bytes_from_device);
  recorder_.ring_written();
}

std::uint64_t TraceWriter::fetch_held_on_device(ArrayRing::HeldCall& call) noexcept {
  std::uint64_t fetched_bytes = 0;
  for (std::size_t i = 0; i < call.record->arrays.size(); ++i) {
    auto& array = call.record->arrays[i];
    const auto held = array.on_device;
    if (held.source == nullptr) continue;
    auto& outcome = call.outcomes[i];
    bool fetched = false;
    try {
      fetched = held.source->fetch(held.ticket, array.reserve_data(held.saved_bytes), held.saved_bytes);
    } catch (const std::bad_alloc&) {
      log_error("no memory to bring call {}'s array {} from its device for the ring's files", call.record->seq, i);
    }
    if (fetched) {
      fetched_bytes += held.saved_bytes;
      array.captured = true;
      outcome.stats.reset();  // the bytes' own, with their XXH64, as for an array copied at capture
    } else if (!outcome.file.empty()) {
      outcome.file.clear();
      outcome.no_file = NoFileReason::RingDeviceLost;
    }
  }
  return fetched_bytes;
}

void TraceWriter::release_unwritten(ArrayRing::HeldCall& call, NoFileReason reason) noexcept {
  for (auto& o : call.outcomes) {
    if (o.file.empty()) continue;
    o.file.clear();
    o.no_file = reason;
  }
  finish_record(*call.record, call.outcomes);
  RecordPool::give(std::move(call.record));
}

void TraceWriter::write_final_files() noexcept {
  if (!end_trigger_.empty() && ring_.on()) {
    dump_ring(end_trigger_);
  } else {
    for (auto& call : ring_.take_at_end()) release_unwritten(call, NoFileReason::RingNotTriggered);
  }
  lines_.emit_waiting();
  lines_.flush();
  rename_for_rank();  // summary.json says where the files are
  dir_.release_reserve();
  try {
    summary_.set_store_once(files_.store_once_json());
    summary_.set_ring(ring_.to_json());
    summary_.set_trace_bytes(lines_.trace_bytes());
    summary_.write_files(dir_, final_dropped_, final_waits_);
  } catch (const std::exception& e) {
    log_error("cannot write the summary files into {}: {}", dir_.path(), e.what());
  }
}

void TraceWriter::rename_for_rank() noexcept {
  const long rank = recorder_.take_rank_to_name();
  if (rank < 0) return;
  try {
    const auto old_path = dir_.path();
    const auto why_not = name_after_rank(dir_, rank, recorder_.root_pid());
    if (!why_not.empty()) {
      log_warn("rank {}: the output stays in {}: {}", rank, old_path, why_not);
      return;
    }
    recorder_.set_output_path(dir_.path());
    log_debug("rank {} learned: {} renamed {}", rank, old_path, dir_.path());
  } catch (const std::exception& e) {
    log_warn("rank {}: the output stays in {}: {}", rank, dir_.path(), e.what());
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
    lines_.emit(record.seq, line_.view(), api_line);
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
  log_error("could not record call {}: {}", record.seq, e.what());
  summary_.count_record_error();
}

}  // namespace ophook::core
