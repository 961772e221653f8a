#include "array_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <system_error>

#include "ophook/log.hpp"
#include "ophook/npy.hpp"
#include "ophook/recorder.hpp"
#include "ophook/stats.hpp"
#include "run_summary.hpp"
#include "termination_signal.hpp"

namespace ophook::core {
namespace {

// Array files this large are written by a helper thread while the writer computes the array's
// statistics: the two passes over the data overlap instead of adding up (64 MiB of float64 on the
// bench machine: statistics 45 ms and write() 21 ms of CPU, one after the other before).
constexpr std::size_t kOverlapBytes = std::size_t{8} << 20;
// For the benchmarks' "before" figures only: every file written, none linked.
constexpr const char* kNoLinksVariable = "OPHOOK_TEST_NO_LINKS";

std::span<const std::byte> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
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
      return "its bytes, held on its device for the OPHOOK_RING_BYTES ring, were overwritten there by newer calls' "
             "or could not be copied to the host";
    case NoFileReason::None: break;
  }
  return "";
}

ArrayFiles::ArrayFiles(OutputDir& dir, const Recorder& recorder, RunSummary& summary, bool helper_thread,
                       DigestFunction digest)
    : dir_(dir), recorder_(recorder), summary_(summary), batch_(dir, helper_thread), index_(digest) {
  const char* no_links = std::getenv(kNoLinksVariable);
  links_on_ = no_links == nullptr || std::strcmp(no_links, "1") != 0;
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
        outcome.stats = array.shared ? array.shared->stats(descr, array.nbytes) : compute_stats(descr, array.bytes(), array.nbytes);
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
    plan_file(record, array, descr, outcome, add_stats);
  }
}

template <typename AddStats>
void ArrayFiles::plan_file(const CallRecord& record, const ArrayCapture& array, const std::string& descr,
                           ArrayOutcome& outcome, AddStats&& add_stats) {
  if (summary_.budget_exhausted()) {  // the run goes on in stats mode: no file, no link
    add_stats();
    outcome.file.clear();
    outcome.no_file = NoFileReason::Budget;
    return;
  }
  FileJob job;
  job.outcome = &outcome;
  job.header = encode_npy_header(descr, array.shape);
  job.data = {array.bytes(), array.nbytes};
  const std::span<const std::byte> parts[] = {bytes_of(job.header), job.data};
  Planned planned{&record, {}};
  if (links_on_) {
    planned.digest = index_.digest(parts);
    if (const auto* first = index_.find(planned.digest); first != nullptr && first->file != outcome.file) {
      // Equal bytes have equal statistics: the first file's are taken, and computed after all
      // should the comparison find other bytes (settle_links). A repeat then costs a digest and a
      // comparison, a fraction of the statistics' pass.
      if (first->stats && !outcome.stats) {
        outcome.stats = first->stats;
        planned.descr = &descr;
      }
      add_stats();
      job.same_as = first->file;
      links_.push_back(std::move(job));
      link_plans_.push_back(planned);
      return;
    }
  }
  if (array.nbytes < kOverlapBytes) {
    add_stats();
    plan_write(std::move(job), planned);
    return;
  }
  const auto size = job.header.size() + job.data.size();
  if (!summary_.budget_allows(size, record)) {
    add_stats();
    outcome.file.clear();
    outcome.no_file = NoFileReason::Budget;
    return;
  }
  summary_.count_written(size);
  const auto result = write_file_with_stats(dir_, outcome.file, parts, add_stats);
  if (!result.ok) return unwritten(outcome, size, planned.digest, result.error);
  if (links_on_) index_.remember(planned.digest, outcome.file, outcome.stats);
}

bool ArrayFiles::plan_write(FileJob&& job, const Planned& planned) {
  auto& outcome = *job.outcome;
  const auto size = job.header.size() + job.data.size();
  if (!summary_.budget_allows(size, *planned.record)) {
    outcome.file.clear();
    outcome.no_file = NoFileReason::Budget;
    return false;
  }
  summary_.count_written(size);  // taken back by settle_writes if the file is not written
  // From now on the first file of this content, for later arrays (this batch's too: links are
  // made after the writes).
  if (links_on_) index_.remember(planned.digest, outcome.file, outcome.stats);
  job.same_as.clear();
  writes_.push_back(std::move(job));
  write_plans_.push_back(planned);
  return true;
}

void ArrayFiles::write_planned() noexcept {
  batch_.write_all(writes_);
  settle_writes();
  if (links_.empty()) return;
  batch_.write_all(links_);
  settle_links();  // the links not made become writes
  batch_.write_all(writes_);
  settle_writes();
}

void ArrayFiles::settle_writes() noexcept {
  for (std::size_t i = 0; i < writes_.size(); ++i) {
    auto& job = writes_[i];
    if (job.result.ok && job.attempted) continue;
    unwritten(*job.outcome, job.header.size() + job.data.size(), write_plans_[i].digest,
              job.attempted ? job.result.error : 0);
  }
  writes_.clear();
  write_plans_.clear();
}

void ArrayFiles::settle_links() noexcept {
  auto links = std::move(links_);
  auto plans = std::move(link_plans_);
  links_.clear(), link_plans_.clear();
  for (std::size_t i = 0; i < links.size(); ++i) {
    auto& job = links[i];
    if (job.attempted && job.link.outcome == OutputDir::Link::Made) {
      job.outcome->same_as = std::move(job.same_as);
      summary_.count_linked(job.header.size() + job.data.size());
      continue;
    }
    if (job.attempted && job.link.outcome == OutputDir::Link::Failed && refuses_links(job.link.error)) {
      refuse_links(job.link.error);
    }
    if (failed_) {
      job.outcome->file.clear();
      continue;
    }
    // Other bytes under that name (a digest collision), the file gone, or the link refused: the
    // file is written, and becomes the first of its content (EMLINK: the old one has too many).
    auto& outcome = *job.outcome;
    const bool compared_equal = job.attempted && job.link.outcome == OutputDir::Link::Failed;
    if (plans[i].descr != nullptr && !compared_equal) {
      outcome.stats = compute_stats(*plans[i].descr, job.data.data(), job.data.size());
    }
    try {
      plan_write(std::move(job), plans[i]);
    } catch (const std::exception& e) {
      log_error("cannot plan {}: {}", job.outcome->file, e.what());
      job.outcome->file.clear();
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
