#include "recording/capture_budget.hpp"

#include <string>

#include "ophook/process/run_facts.hpp"
#include "recording/value_capture.hpp"

namespace ophook::py {
namespace {

/// Bytes of array data already copied into the record being built.
std::size_t copied_bytes(const core::CallRecord& record) {
  std::size_t bytes = 0;
  for (const auto& a : record.arrays) bytes += a.captured ? a.nbytes : 0;
  return bytes;
}

/// An array that would take a call's record over OPHOOK_QUEUE_BYTES is not copied: copying it
/// would hold more memory than the user allowed (a 4 GiB array, a second 4 GiB). The record says
/// why, and summary.json counts such arrays under notes.arrays_not_copied.
std::uint32_t refuse_oversized(ValueCapture& capture, std::size_t nbytes) {
  auto& recorder = capture.recorder();
  const std::string reason = "not copied: the call's arrays exceed OPHOOK_QUEUE_BYTES=" +
                             std::to_string(recorder.config().queue_bytes) +
                             " (no file, no statistics; raise OPHOOK_QUEUE_BYTES to capture it)";
  const auto& record = capture.record();
  // The count lives in the note, so that each run (a Tracer, a test under the pytest plugin)
  // counts its own arrays.
  recorder.facts().update_note("arrays_not_copied", [&](nlohmann::json& note) {
    const auto count = note.is_object() ? note.value("count", std::uint64_t{0}) + 1 : 1;
    note = {{"count", count},
            {"reason", reason},
            {"last_seq", record.seq},
            {"last_op", recorder.op(record.op_id).name},
            {"last_nbytes", nbytes}};
  });
  return recorder.intern(reason);
}

}  // namespace

CopyBudget reserve_copy(ValueCapture& capture, std::size_t nbytes, bool into_buffer) {
  auto& recorder = capture.recorder();
  const auto record_bytes = copied_bytes(capture.record()) + nbytes;
  if (record_bytes > recorder.config().queue_bytes) return {false, refuse_oversized(capture, nbytes), {}};
  // A reused buffer only moves from idle to this record: captured memory does not grow, so there
  // is nothing to wait for. Memory grows only by fresh buffers, and only once queued, idle and
  // this record's bytes together fit the cap (has_room frees idle buffers to make them fit).
  CopyBudget budget{true, 0, into_buffer ? core::CaptureBufferPool::take(nbytes) : core::SpareBuffer{}};
  if (budget.spare.data) return budget;
  if (!recorder.has_room(record_bytes)) {
    Py_BEGIN_ALLOW_THREADS recorder.wait_for_room(record_bytes);
    Py_END_ALLOW_THREADS
  }
  return budget;
}

}  // namespace ophook::py
