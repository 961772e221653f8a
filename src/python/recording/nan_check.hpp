#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ophook/model/record.hpp"
#include "ophook/model/record_pool.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"

/// OPHOOK_NAN's check of a recorded call (docs/design.md, "The program's side of a call"): which
/// of its arrays hold NaN/Inf, whether it is a culprit (NaN/Inf out of finite inputs), and what a
/// culprit does: one line on stderr, its record marked, the ring's trigger, a FloatingPointError
/// under `raise`. GIL required.
namespace ophook::py {

/// What becomes of a call's record.
enum class RecordUse : std::uint8_t {
  Recorded,   // written, like every recorded call
  CheckOnly,  // OPHOOK_NAN's check of an autograd node of a backward pass no enabled level records
              // (torch/backward_check.hpp): kept, and given its seq, only when it is a culprit
};

/// OPHOOK_NAN: when the outputs hold NaN/Inf and the inputs (arrays [0, first_output)) did not,
/// marks the record, reports the first such call on stderr and, under `raise`, flushes the record
/// and replaces `result` by a FloatingPointError naming the op. A NumPy call made while the
/// program's np.errstate silences the condition (invalid for NaN, divide or over for Inf) is no
/// culprit: it is counted as expected instead. Submits the record (a CheckOnly one only when it is
/// a culprit). Returns the (possibly new) result.
PyObject* check_nonfinite(core::Recorder& recorder, core::RecordPtr& record, std::size_t first_output,
                          std::optional<bool> inputs_nonfinite_before, PyObject* result, RecordUse use);

/// OPHOOK_NAN's verdict on a finished call: its outputs hold NaN/Inf and its inputs (arrays
/// [0, first_output), judged before the call where it could write into them) did not.
bool fresh_nonfinite(const core::Recorder& recorder, const core::CallRecord& record, std::size_t first_output,
                     std::optional<bool> inputs_nonfinite_before);

/// A framework's last word on a call about to be named a culprit, from what the record does not
/// show (an autograd node's saved forward tensors), in two steps so that a call judged later (its
/// values still on a device) takes what the verdict needs while it runs: `gather` returns it (a
/// new reference, nullptr for nothing) and may note more of the call on its record (where its
/// autograd node was made); `fed`, given it, says that the NaN/Inf came from that state, so that
/// the call is no culprit. torch's backward check sets one.
struct CulpritCheck {
  PyObject* (*gather)(core::CallRecord& record);
  bool (*fed)(PyObject* evidence);
};
void set_culprit_check(const CulpritCheck* check) noexcept;

/// The culprit check's evidence on `record` while it runs (a new reference; nullptr when no check
/// is set or it needs nothing).
PyObject* gather_culprit_evidence(core::CallRecord& record);

/// The verdict on `record` whose outputs hold a fresh NaN/Inf (`fresh`), given the evidence
/// gathered while it ran (borrowed; may be nullptr): a culprit unless the check says it was fed.
/// What gather noted of a call that is no culprit is taken off its record.
bool convicted(core::CallRecord& record, bool fresh, PyObject* evidence);

/// Marks `record` as a culprit and, for the run's first, says so on stderr. Returns the call's
/// description ("seq 12 torch.log at …").
std::string announce_nonfinite(core::Recorder& recorder, core::CallRecord& record);

/// Which arrays of a record any_nonfinite looks at: all, those read in place (the caller's own,
/// OPHOOK_NAN in `trace` mode), or the others (copies, device counts: taken before the call).
enum class Arrays : std::uint8_t { All, InPlace, Copied };

/// Whether any of arrays [from, to) of `record` (those `which` selects) holds NaN/Inf.
bool any_nonfinite(const core::Recorder& recorder, const core::CallRecord& record, std::size_t from, std::size_t to,
                   Arrays which);

}  // namespace ophook::py
