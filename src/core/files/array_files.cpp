#include "files/array_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "ophook/files/npy.hpp"
#include "ophook/log.hpp"
#include "ophook/process/recorder.hpp"
#include "ophook/stats/stats.hpp"
#include "process/termination_signal.hpp"
#include "writer/run_summary.hpp"

namespace ophook::core {
namespace {

// An array this large gets its statistics and its file as two jobs, which two threads may run at
// once: the two passes over the data overlap instead of adding up, each a large share of the
// array's cost (docs/performance.md, "Figures behind the code").
constexpr std::size_t kOverlapBytes = std::size_t{8} << 20;
// Passes over less than this many bytes in all run on the writer alone: waking a helper costs
// more than it saves (a file job is always worth sharing: its cost is the kernel's).
constexpr std::size_t kShareBytes = std::size_t{1} << 20;

std::span<const std::byte> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

ArrayStats statistics_of(const ArrayCapture& array, const std::string& descr) {
  return array.shared ? array.shared->stats(descr, array.nbytes) : compute_stats(descr, array.bytes(), array.nbytes);
}

/// Computes the statistics an outcome lacks, on any thread; a failure (no memory for a shared
/// copy's memo) leaves it without and says so.
void complete_statistics(ArrayOutcome& outcome, const ArrayCapture& array, const std::string& descr) noexcept {
  if (outcome.stats) return;
  try {
    outcome.stats = statistics_of(array, descr);
  } catch (const std::exception& e) {
    log_error("no statistics for {}: {}", outcome.file, e.what());
  }
}

// Errors by which a file system or the permissions refuse hard links altogether (EMLINK only
// concerns the one file that has too many).
bool refuses_links(int error) noexcept {
  return error == EPERM || error == EACCES || error == EOPNOTSUPP || error == EXDEV || error == ENOSYS;
}

}  // namespace

std::string_view to_string(NoFileReason reason) noexcept {
  switch (reason) {
    case NoFileReason::Budget: return "OPHOOK_MAX_BYTES reached";
    case NoFileReason::TerminationDeadline: return "the time allowed for files after a termination signal had passed";
    case NoFileReason::RingTooLarge: return "larger than the OPHOOK_RING_BYTES ring";
    case NoFileReason::RingEvicted: return "left the OPHOOK_RING_BYTES ring unwritten: no trigger while it was held";
    case NoFileReason::RingNotTriggered: return "in the OPHOOK_RING_BYTES ring when the run ended without a trigger";
    case NoFileReason::RingDeviceLost:
      return "its bytes, held on its device for the OPHOOK_RING_BYTES ring, were overwritten there by newer calls', "
             "kept out of it by its gate, or could not be copied to the host";
    case NoFileReason::None: break;
  }
  return "";
}

ArrayFiles::ArrayFiles(OutputDir& dir, const Recorder& recorder, RunSummary& summary, unsigned helpers,
                       DigestFunction digest)
    : dir_(dir), recorder_(recorder), summary_(summary), threads_(helpers), index_(digest) {
  links_on_ = !recorder.config().test.no_links;
}

bool ArrayFiles::open() const noexcept { return !failed_ && !summary_.budget_exhausted(); }

void ArrayFiles::note_budget_spent(const CallRecord& record, std::vector<ArrayOutcome>& outcomes) const noexcept {
  if (failed_ || !summary_.budget_exhausted()) return;
  for (std::size_t i = 0; i < record.arrays.size(); ++i) {
    const auto& array = record.arrays[i];
    if (array.alias_of < 0 && array.captured && !recorder_.dtype(array.dtype_id).descr.empty()) {
      outcomes[i].no_file = NoFileReason::Budget;
    }
  }
}

void ArrayFiles::add(const CallRecord& record, std::vector<ArrayOutcome>& outcomes, bool files) {
  for (std::size_t i = 0; i < record.arrays.size(); ++i) {
    const auto& array = record.arrays[i];
    auto& outcome = outcomes[i];
    if (array.alias_of >= 0) continue;  // shares its first's outcome, once its file is settled
    const auto& descr = recorder_.dtype(array.dtype_id).descr;
    const bool has_data = array.captured && !descr.empty();
    auto add_stats = [&] {
      if (outcome.stats) return;
      if (has_data) {
        outcome.stats = statistics_of(array, descr);
      } else if (array.given_stats) {
        outcome.stats = array.given_stats;  // computed on the tensor's device
      }
    };
    if (!files || outcome.file.empty()) {
      add_stats();
      continue;
    }
    if (!has_data || failed_ || deadline_passed()) {
      if (has_data && !failed_) {
        summary_.count_unwritten_at_termination();
        outcome.no_file = NoFileReason::TerminationDeadline;
      }
      add_stats();
      outcome.file.clear();
      continue;
    }
    PlannedFile planned{{}, &record, &array, &descr, {}};
    planned.job.outcome = &outcome;
    planned.job.header = encode_npy_header(descr, array.shape);
    planned.narrow = array.shared && array.shared->widens();
    if (!planned.narrow) planned.job.data = {array.bytes(), array.nbytes};
    queued_.push_back(std::move(planned));
  }
}

void ArrayFiles::write_planned() noexcept {
  widen_queued();
  take_digests();
  plan_queued();
  make_files();
  settle_writes();
  if (links_.empty()) return;
  make_links();
  settle_links();  // the links not made become writes
  make_files();
  settle_writes();
}

void ArrayFiles::widen_queued() noexcept {
  std::size_t bytes = 0;
  for (const auto& planned : queued_) bytes += planned.narrow ? planned.array->nbytes : 0;
  if (bytes == 0) return;
  threads_.run(
      queued_.size(),
      [&](std::size_t i) {
        auto& planned = queued_[i];
        if (!planned.narrow) return;
        if (const std::byte* data = planned.array->bytes()) planned.job.data = {data, planned.array->nbytes};
      },
      bytes >= kShareBytes);
  std::erase_if(queued_, [](PlannedFile& planned) {
    if (!planned.narrow || planned.job.data.data() != nullptr || planned.array->nbytes == 0) return false;
    log_error("no file and no statistics for {}: no memory to widen its bytes into", planned.job.outcome->file);
    planned.job.outcome->file.clear();
    return true;
  });
}

void ArrayFiles::take_digests() noexcept {
  if (!links_on_ || queued_.empty()) return;
  std::size_t bytes = 0;
  for (const auto& planned : queued_) bytes += planned.job.data.size();
  threads_.run(
      queued_.size(),
      [&](std::size_t i) {
        auto& planned = queued_[i];
        const std::span<const std::byte> parts[] = {bytes_of(planned.job.header), planned.job.data};
        planned.digest = index_.digest(parts);
      },
      bytes >= kShareBytes);
}

void ArrayFiles::plan_queued() noexcept {
  for (auto& planned : queued_) {
    auto& outcome = *planned.job.outcome;
    try {
      if (failed_ || summary_.budget_exhausted()) {  // the run goes on in stats mode: no file, no link
        if (!failed_) outcome.no_file = NoFileReason::Budget;
        outcome.file.clear();
        stats_only_.push_back({&outcome, planned.array, planned.descr});
        continue;
      }
      if (links_on_) {
        if (const auto* first = index_.find(planned.digest); first != nullptr && first->file != outcome.file) {
          // Equal bytes have equal statistics: a link made takes the first file's (settle_links).
          // A repeat then costs a digest and a comparison, a fraction of the statistics' pass.
          planned.job.same_as = first->file;
          links_.push_back(std::move(planned));
          continue;
        }
      }
      const auto* array = planned.array;
      const auto* descr = planned.descr;
      if (!plan_write(std::move(planned))) stats_only_.push_back({&outcome, array, descr});
    } catch (const std::exception& e) {
      log_error("cannot plan {}: {}", outcome.file, e.what());
      outcome.file.clear();
      complete_statistics(outcome, *planned.array, *planned.descr);
    }
  }
  queued_.clear();
}

bool ArrayFiles::plan_write(PlannedFile&& planned) {
  auto& outcome = *planned.job.outcome;
  const auto size = planned.job.header.size() + planned.job.data.size();
  if (!summary_.budget_allows(size, *planned.record)) {
    outcome.file.clear();
    outcome.no_file = NoFileReason::Budget;
    return false;
  }
  summary_.count_written(size);  // taken back by settle_writes if the file is not written
  // From now on the first file of this content, for later arrays (this batch's too: links are
  // made after the writes); its statistics are added once computed (settle_writes).
  if (links_on_) index_.remember(planned.digest, outcome.file, outcome.stats);
  planned.job.same_as.clear();
  writes_.push_back(std::move(planned));
  return true;
}

void ArrayFiles::make_files() noexcept {
  if (writes_.empty() && stats_only_.empty()) return;
  work_.clear();
  std::size_t stats_bytes = 0;
  try {
    for (std::size_t i = 0; i < writes_.size(); ++i) {
      const auto& planned = writes_[i];
      if (planned.job.outcome->stats) {
        work_.push_back({Work::Kind::Write, i});
      } else if (planned.job.data.size() < kOverlapBytes) {
        work_.push_back({Work::Kind::StatsThenWrite, i});
      } else {
        work_.push_back({Work::Kind::StatsOfWrite, i});
        work_.push_back({Work::Kind::Write, i});
      }
    }
    for (std::size_t i = 0; i < stats_only_.size(); ++i) {
      work_.push_back({Work::Kind::StatsOnly, i});
      stats_bytes += stats_only_[i].array->nbytes;
    }
  } catch (const std::exception&) {
    work_.clear();  // no memory for the list: each file and its statistics one after the other, here
  }
  medium_failed_.store(false, std::memory_order_relaxed);
  auto write = [this](PlannedFile& planned) {
    // After a failure of the medium the batch's files not yet begun stay unattempted.
    if (medium_failed_.load(std::memory_order_relaxed)) return;
    if (!do_file_job(dir_, planned.job)) medium_failed_.store(true, std::memory_order_relaxed);
  };
  if (work_.empty()) {
    for (auto& planned : writes_) {
      complete_statistics(*planned.job.outcome, *planned.array, *planned.descr);
      write(planned);
    }
    for (auto& s : stats_only_) complete_statistics(*s.outcome, *s.array, *s.descr);
    stats_only_.clear();
    return;
  }
  threads_.run(
      work_.size(),
      [&](std::size_t i) {
        const auto& work = work_[i];
        if (work.kind == Work::Kind::StatsOnly) {
          const auto& s = stats_only_[work.index];
          return complete_statistics(*s.outcome, *s.array, *s.descr);
        }
        auto& planned = writes_[work.index];
        if (work.kind != Work::Kind::Write) complete_statistics(*planned.job.outcome, *planned.array, *planned.descr);
        if (work.kind != Work::Kind::StatsOfWrite) write(planned);
      },
      !writes_.empty() || stats_bytes >= kShareBytes);
  stats_only_.clear();
}

void ArrayFiles::make_links() noexcept {
  threads_.run(links_.size(), [&](std::size_t i) { do_file_job(dir_, links_[i].job); });
}

void ArrayFiles::settle_writes() noexcept {
  for (auto& planned : writes_) {
    auto& job = planned.job;
    if (job.result.ok && job.attempted) {
      if (links_on_ && job.outcome->stats) index_.add_stats(planned.digest, job.outcome->file, *job.outcome->stats);
      continue;
    }
    unwritten(*job.outcome, job.header.size() + job.data.size(), planned.digest, job.attempted ? job.result.error : 0);
  }
  writes_.clear();
}

void ArrayFiles::settle_links() noexcept {
  auto links = std::move(links_);
  links_.clear();
  for (auto& planned : links) {
    auto& job = planned.job;
    auto& outcome = *job.outcome;
    if (job.attempted && job.link.outcome == OutputDir::Link::Made) {
      summary_.count_linked(job.header.size() + job.data.size());
      const auto* first = index_.find(planned.digest);
      if (!outcome.stats && first != nullptr && first->file == job.same_as && first->stats) {
        outcome.stats = first->stats;
      }
      outcome.same_as = std::move(job.same_as);
      if (!outcome.stats) complete_statistics(outcome, *planned.array, *planned.descr);
      continue;
    }
    if (job.attempted && job.link.outcome == OutputDir::Link::Failed && refuses_links(job.link.error)) {
      refuse_links(job.link.error);
    }
    if (failed_) {
      outcome.file.clear();
      complete_statistics(outcome, *planned.array, *planned.descr);
      continue;
    }
    // Other bytes under that name (a digest collision), the file gone, or the link refused: the
    // file is written, and becomes the first of its content (EMLINK: the old one has too many).
    try {
      const auto* array = planned.array;
      const auto* descr = planned.descr;
      if (!plan_write(std::move(planned))) complete_statistics(outcome, *array, *descr);
    } catch (const std::exception& e) {
      log_error("cannot plan {}: {}", outcome.file, e.what());
      outcome.file.clear();
      complete_statistics(outcome, *planned.array, *planned.descr);
    }
  }
}

void ArrayFiles::unwritten(ArrayOutcome& outcome, std::uint64_t bytes, const ContentDigest& digest, int error) noexcept {
  summary_.uncount_written(bytes);
  if (links_on_) index_.forget(digest, outcome.file);
  if (error != 0) file_failed(outcome.file, error);
  outcome.file.clear();
}

void ArrayFiles::refuse_links(int error) noexcept {
  if (!links_on_) return;
  links_on_ = false;
  links_refused_ = error;
  log_debug("{}: hard links refused ({}): repeated content is written again", dir_.path(), std::strerror(error));
}

nlohmann::ordered_json ArrayFiles::store_once_json() const {
  using Json = nlohmann::ordered_json;
  Json links = links_refused_ ? Json(fmt::format("refused: {}", std::strerror(links_refused_)))
                              : Json(links_on_ ? "on" : "off");
  return {{"links", std::move(links)},
          {"index_entries", index_.entries()},
          {"index_forgotten", index_.forgotten()}};
}

bool ArrayFiles::deadline_passed() noexcept {
  const auto deadline = deadline_.load(std::memory_order_relaxed);
  if (deadline == kNoDeadline) return false;
  if (!past_deadline_) {
    if (std::chrono::steady_clock::now().time_since_epoch().count() < deadline) return false;
    past_deadline_ = true;
    const auto reason = fmt::format("the {} s allowed for files after a termination signal passed: the arrays "
                                    "still queued get statistics but no file", kTerminationFilesMs / 1000);
    summary_.note_stopped(".npy files", reason);
    log_warn("{}: {}", dir_.path(), reason);
  }
  return true;
}

void ArrayFiles::file_failed(const std::string& name, int error) noexcept {
  const bool first = summary_.count_write_error(name, error);
  if (!error_concerns_one_file(error)) {
    if (failed_) return;  // the other file thread's file of the same batch, failing alike
    failed_ = true;
    summary_.note_stopped(".npy files", name + ": " + std::strerror(error));
    log_error("cannot write {}/{}: {}: no more .npy files, trace.jsonl and statistics go on",
                   dir_.path(), name, std::strerror(error));
  } else if (first) {
    log_error("cannot write {}/{}: {}: this file is skipped (the first such error; summary.json counts them all)",
                   dir_.path(), name, std::strerror(error));
  }
}

}  // namespace ophook::core
