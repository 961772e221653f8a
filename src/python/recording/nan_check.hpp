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
/// show: false when the NaN/Inf came from state the call computed from besides its recorded inputs
/// (an autograd node's saved forward tensors), so that it is no culprit; it may also say more of
/// the call (where its autograd node was made). torch's backward check sets one. Called only for a
/// fresh NaN/Inf judged while the call runs.
using CulpritCheck = bool (*)(core::Recorder& recorder, core::CallRecord& record);
void set_culprit_check(CulpritCheck check) noexcept;

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
