#include "ophook/process/recorder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "ophook/capture/capture_buffer_pool.hpp"
#include "ophook/capture/thread_clock.hpp"
#include "ophook/error.hpp"
#include "ophook/files/naming.hpp"
#include "ophook/log.hpp"
#include "ophook/model/op_kinds.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/model/record_queue.hpp"
#include "ophook/process/fork_handlers.hpp"
#include "ophook/process/run_facts.hpp"
#include "ophook/process/run_root.hpp"
#include "process/op_filters.hpp"
#include "writer/trace_writer.hpp"

namespace ophook::core {
namespace {

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace

std::atomic<Recorder*> Recorder::instance_{nullptr};
std::atomic<Recorder::ExitHook> Recorder::exit_hooks_[Recorder::kExitHooks];

void Recorder::add_exit_hook(ExitHook hook) noexcept {
  for (auto& slot : exit_hooks_) {
    ExitHook expected = nullptr;
    if (slot.load(std::memory_order_acquire) == hook) return;
    if (slot.compare_exchange_strong(expected, hook, std::memory_order_acq_rel)) return;
  }
  log_error("more than {} exit hooks: one of them will not run", kExitHooks);
}

void Recorder::run_exit_hooks() noexcept {
  for (auto& slot : exit_hooks_) {
    if (auto hook = slot.load(std::memory_order_acquire)) hook();
  }
}

Recorder& Recorder::start(const Config& config) { return start(config, WriterThread::Start); }

Recorder& Recorder::start(const Config& config, WriterThread thread) {
  static std::mutex start_mu;
  std::lock_guard lock(start_mu);
  if (auto* existing = get()) {
    if (existing->finished()) existing->begin_run(config, thread);  // a second Tracer in one process
    return *existing;
  }
  auto recorder = std::unique_ptr<Recorder>(new Recorder());
  recorder->begin_run(config, thread);
  set_fork_handler(ForkStage::Recorder, {[]() noexcept { if (auto* r = get()) r->on_fork_prepare(); },
                                         []() noexcept { if (auto* r = get()) r->on_fork_parent(); },
                                         []() noexcept { if (auto* r = get()) r->on_fork_child(); }});
  instance_.store(recorder.release(), std::memory_order_release);
  return *get();
}

void Recorder::begin_run(const Config& config, WriterThread thread) {
  config_ = config;
  // The ops already known are judged again by this run's filters; the others at their first sight.
  filters_ = std::make_unique<OpFilters>(config_);
  ops_.for_each([&](OpEntry& entry) {
    entry.recorded = filters_->records(entry.name, entry.annotation);
    entry.dumped = filters_->dumps(entry.name, entry.annotation);
  });
  seq_.store(0);
  counters_.reset();
  nonfinite_reported_.store(false);
  facts_->clear_notes();  // an earlier Tracer's notes are not this run's
  owner_pid_.store(::getpid());
  start_t_ns_ = monotonic_ns();
  rank_.at_start();
  const char* root_pid = std::getenv(kRootPidVariable);
  const char* root_output = std::getenv(kRootOutputVariable);
  const bool is_root = root_pid == nullptr || root_output == nullptr || std::atol(root_pid) == ::getpid();
  root_pid_ = is_root ? ::getpid() : static_cast<int>(std::atol(root_pid));
  if (is_root) {
    root_output_ = absolute(config.output);
    ::setenv(kRootPidVariable, std::to_string(::getpid()).c_str(), 1);
    ::setenv(kRootOutputVariable, root_output_.c_str(), 1);
    start_writer(root_output_, thread);
  } else {
    root_output_ = root_output;
    start_writer(child_output_path(), thread);
  }
  finished_.store(false, std::memory_order_release);
}

std::vector<std::string> annotation_list(std::string_view annotation, const char* key) {
  std::vector<std::string> items;
  if (annotation.empty()) return items;
  const auto fields = nlohmann::json::parse("{" + std::string(annotation) + "}", nullptr, false);
  if (fields.is_discarded() || !fields.contains(key) || !fields[key].is_array()) return items;
  for (const auto& item : fields[key]) {
    if (item.is_string()) items.push_back(item.get<std::string>());
  }
  return items;
}

Recorder::Recorder() : facts_(std::make_unique<RunFacts>()) {}
Recorder::~Recorder() = default;

std::string Recorder::child_output_path() const {
  if (rank_.own() >= 0) return root_output_ + "/rank" + std::to_string(rank_.own());
  return root_output_ + "/pid" + std::to_string(::getpid());
}

void Recorder::start_writer(std::string output_path, WriterThread thread) {
  const bool nested = output_path != root_output_;
  set_output_path(output_path);
  rank_to_name_.store(-1);  // an earlier run's: this directory is named after the rank known now
  writer_.reset();  // a finished run's writer, already joined
  queue_.reset();
  queue_ = std::make_unique<RecordQueue>(config_.queue_bytes);
  CaptureBufferPool::set_limit(config_.queue_bytes);  // idle buffers count against the same cap
  writer_ = std::make_unique<TraceWriter>(*this, *queue_, std::move(output_path), nested, thread);
  writer_ready_.store(true, std::memory_order_release);
}

std::string Recorder::output_path() const {
  std::lock_guard lock(output_path_mu_);
  return output_path_;
}

void Recorder::set_output_path(std::string path) {
  std::lock_guard lock(output_path_mu_);
  output_path_ = std::move(path);
}

void Recorder::learn_rank(long rank) {
  std::lock_guard lock(writer_mu_);
  adopt_rank(rank, /*export_it=*/true);
}

void Recorder::adopt_rank(long rank, bool export_it) {
  if (!rank_.learn(rank, export_it)) return;
  // The root writes into the run's directory itself, never renamed; a fork child that has not
  // started its writer yet names its directory after the rank when it does.
  if (writer_ready_.load(std::memory_order_acquire) && output_path() != root_output_) {
    rank_to_name_.store(rank);
  }
}

std::uint32_t Recorder::op_id(std::string_view name, Level level) { return op_id(name, level, {}); }

std::uint32_t Recorder::op_id(std::string_view name, Level level, std::string_view annotation) {
  const std::string key(name);
  auto entry = [&](std::uint32_t same_name_as) {
    return OpEntry{key, sanitize_op_name(key), level, filters_->records(key, annotation), filters_->dumps(key, annotation),
                   returns_uninitialized_memory(key),
                   writes_into_arguments(key, level), std::string(annotation), same_name_as};
  };
  const auto first = ops_.id_of(key, [&] { return entry(0); });
  if (first == 0 || ops_.at(first).annotation == annotation) return first;
  return ops_.id_of(key + '\x1f' + std::string(annotation), [&] { return entry(first); });
}

std::uint32_t Recorder::intern(std::string_view text) {
  const std::string key(text);
  return strings_.id_of(key, [&] { return std::string(text); });
}

std::uint32_t Recorder::intern_dtype(const DtypeInfo& info) {
  const auto key = info.name + '\x1f' + info.descr + '\x1f' + info.saved_name;
  return dtypes_.id_of(key, [&] { return info; });
}

bool Recorder::ensure_writer() noexcept {
  if (writer_ready_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(writer_mu_);
  if (writer_ready_.load(std::memory_order_relaxed)) return true;
  if (finished()) return false;
  try {
    rank_.learn(ProcessRank::from_environment(), /*export_it=*/true);  // a fork child's own, set since the fork
    start_writer(child_output_path(), WriterThread::Start);
    return true;
  } catch (const std::exception& e) {
    log_error("recording off in this process: {}", e.what());
    finished_.store(true);
    return false;
  }
}

bool Recorder::try_submit(RecordPtr& record) noexcept {
  if (finished() || !ensure_writer()) {
    counters_.count_dropped();
    record.reset();
    return true;
  }
  return queue_->try_push(record);
}

void Recorder::submit(RecordPtr record) noexcept {
  if (finished() || !ensure_writer()) return counters_.count_dropped();
  queue_->push(std::move(record));
}

bool Recorder::has_room(std::size_t bytes) const noexcept {
  return !writer_ready_.load(std::memory_order_acquire) || queue_->has_room(bytes);
}

void Recorder::wait_for_room(std::size_t bytes) noexcept {
  if (!finished() && ensure_writer()) queue_->wait_for_room(bytes);
}

std::size_t Recorder::bytes_queued() const noexcept { return queue_ ? queue_->bytes_held() : 0; }

void Recorder::flush() noexcept {
  if (!finished() && writer_ready_.load(std::memory_order_acquire)) queue_->wait_drained();
}

bool Recorder::dump_ring(std::string_view why) noexcept {
  if (!uses_ring(config_) || finished() || !ensure_writer()) return false;
  try {
    auto request = RecordPool::take();
    request->ring_trigger = true;
    request->error = why;
    submit(std::move(request));
  } catch (const std::exception& e) {
    log_error("cannot write the ring ({}): {}", why, e.what());
    return false;
  }
  flush();
  return true;
}

void Recorder::finish() noexcept {
  std::lock_guard lock(finish_mu_);
  if (finished_.exchange(true)) return;
  if (!writer_ready_.load(std::memory_order_acquire)) return;  // a child that recorded nothing
  {
    // A RANK the program set after the last look (no optimizer step since): the directory is
    // named after it before the summary is written.
    std::lock_guard lock(writer_mu_);
    adopt_rank(ProcessRank::from_environment(), /*export_it=*/false);
  }
  try {
    writer_->finish(counters_.dropped() + counters_.take_held_records(), queue_->producer_waits());
  } catch (const std::exception& e) {
    log_error("could not finish the output in {}: {}", output_path(), e.what());
  }
  CaptureBufferPool::set_limit(0);  // no memory kept for a run that has ended
}

void Recorder::finish_before_exit() noexcept {
  auto* recorder = get();
  if (recorder == nullptr || recorder->owner_pid_.load() != ::getpid()) return;
  run_exit_hooks();
  recorder->finish();
}

void Recorder::stop_files_at(std::chrono::steady_clock::time_point deadline) noexcept {
  if (writer_ready_.load(std::memory_order_acquire)) writer_->stop_files_at(deadline);
}

void Recorder::finish_on_termination(const char* signal, std::chrono::steady_clock::time_point files_deadline) noexcept {
  auto* recorder = get();
  if (recorder == nullptr || recorder->owner_pid_.load() != ::getpid()) return;
  try {
    recorder->facts().add_note("termination", {{"signal", signal}});
    if (recorder->writer_ready_.load(std::memory_order_acquire)) {
      recorder->writer_->dump_ring_at_end(std::string("termination signal ") + signal);
    }
  } catch (const std::exception&) {
    // Only the note is lost; the output is finished all the same.
  }
  recorder->stop_files_at(files_deadline);
  recorder->finish();
}

void Recorder::on_fork_prepare() noexcept {
  writer_mu_.lock();
  fork_t_ns_ = monotonic_ns();
  // The tables' mutexes are the only ones the child needs afterwards; hold them across fork so the
  // child never inherits one locked by another thread.
  ops_.mutex().lock();
  strings_.mutex().lock();
  dtypes_.mutex().lock();
  facts_->lock_for_fork();
  CaptureBufferPool::lock_for_fork();
}

void Recorder::on_fork_parent() noexcept {
  CaptureBufferPool::unlock_after_fork();
  unlock_tables();
  writer_mu_.unlock();
}

void Recorder::unlock_tables() noexcept {
  facts_->unlock_after_fork();
  dtypes_.mutex().unlock();
  strings_.mutex().unlock();
  ops_.mutex().unlock();
}

void Recorder::on_fork_child() noexcept {
  CaptureBufferPool::unlock_after_fork();
  unlock_tables();
  reset_logger_after_fork();
  // The parent's queue, writer and pending records belong to the parent: leak them (their mutexes
  // may be held by threads that do not exist here) and start afresh in our own directory.
  (void)queue_.release();
  if (writer_) writer_->abandon_after_fork();
  (void)writer_.release();
  seq_.store(0);
  counters_.reset();  // the parent's held records stay the parent's
  owner_pid_.store(::getpid());
  rank_.at_fork_child();
  // The fork, as the parent began it: not the first record that starts the writer, nor when the
  // scheduler first ran this child (two DataLoader workers, forked in order, took their starts out
  // of order under load, and `compare` paired each with the other run's other worker).
  start_t_ns_ = fork_t_ns_;
  // No thread is started here: the child's writer (and its directory) comes with its first record,
  // so a fork that only execs leaves nothing behind.
  writer_mu_.unlock();  // taken by on_fork_prepare in this very thread
  writer_ready_.store(false);
}

}  // namespace ophook::core
