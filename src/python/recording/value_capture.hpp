#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ophook/capture/stats_batch.hpp"
#include "ophook/model/record.hpp"
#include "ophook/model/values.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"

namespace ophook::py {

/// Encodes the Python values of one call (args, kwargs, outputs) into a CallRecord: scalars and
/// containers as values, arrays and tensors as ArrayCapture with a copy of their bytes (modes
/// stats and dump), anything else as {kind, repr}. The same array object seen twice among the
/// inputs (e.g. `a += b` calls add(a, b, out=a)) is captured once. Needs the GIL; never raises:
/// Python errors met while encoding are cleared and the value is described instead.
class ValueCapture {
 public:
  /// `check_only`: OPHOOK_NAN's check of a call that no level records (RecordUse::CheckOnly),
  /// kept only if it is a culprit: its arrays are checked where they lie, in every mode, and
  /// copied only then (copy_live_arrays); `copy_inputs`: the call may write into its inputs,
  /// which are then copied before it runs all the same, as they were.
  ValueCapture(core::CallRecord& record, core::Recorder& recorder, bool check_only = false, bool copy_inputs = false);

  void value(PyObject* object);
  void key(std::string_view name) {
    // out= and inplace= name arguments the call writes into (numpy's out=, torch's out= and
    // F.relu(x, inplace=True)): OPHOOK_NAN then judges the inputs before the call runs.
    if (name == "out" || name == "inplace") inputs_may_be_written_ = true;
    writer_.key(name);
  }
  void begin_kwargs() { record_.kwargs_offset = offset(); }
  /// Outputs never alias inputs: they hold post-call values.
  void begin_outputs();

  // For capturers of array-like types (NumPy here, torch tensors elsewhere):
  core::CallRecord& record() { return record_; }
  core::Recorder& recorder() { return recorder_; }
  /// OPHOOK_NAN in `trace` mode: arrays are checked where they lie (ArrayCapture::live), with no
  /// copy; only an array that is not one dense block is copied for the check.
  bool checks_in_place() const { return checks_in_place_; }
  /// `stats` mode: an array whose bytes lie in C order is summarised where it lies
  /// (stats_in_place_of), instead of copied for the writer.
  bool stats_in_place() const { return stats_in_place_; }
  /// Statistics and digest of `nbytes` C-order bytes at `data`, the values of `array` (the last
  /// array added, its dtype set), into its given_stats: at once for a small array, else shared
  /// with a helper thread (core::StatsBatch) and settled by finish_stats_in_place().
  void stats_in_place_of(core::ArrayCapture& array, const std::byte* data, std::size_t nbytes);
  /// After the inputs are captured: the helper begins on them while the call runs, unless the
  /// call may write into them (`inputs_may_change`): they are then summarised before it runs.
  void inputs_captured(bool inputs_may_change);
  /// After the outputs are captured, before anything reads a record's statistics: every
  /// summary is done and none of the call's memory is read any more.
  void finish_stats_in_place();
  /// Whether an array is copied: `dense` says it could be checked in place.
  bool copies(bool dense) const { return copy_data_ || (checks_in_place_ && !dense); }
  /// OPHOOK_NAN's check of a call no level records, kept only if it is a culprit.
  bool check_only() const { return check_only_; }
  /// A tensor of this call was queued for the device statistics kernel: the call's launch is due.
  void note_queued_on_device() { queued_on_device_ = true; }
  bool queued_on_device() const { return queued_on_device_; }
  /// OPHOOK_RING_BYTES' ring on a device: `bytes` more of the call's arrays held there, as the host
  /// will hold them once fetched; the call's total so far.
  std::uint64_t claim_ring_bytes(std::uint64_t bytes) { return ring_bytes_claimed_ += bytes; }
  /// The call's arrays take more than the ring on the host: the writer will not hold it.
  void note_outgrew_ring() { outgrew_ring_ = true; }
  bool outgrew_ring() const { return outgrew_ring_; }
  /// The call may write into an input (a ufunc's positional output, out=, inplace=).
  void note_inputs_may_be_written() { inputs_may_be_written_ = true; }
  bool inputs_may_be_written() const { return inputs_may_be_written_; }
  /// Index an earlier capture of `object` in the current section, or -1.
  std::int32_t alias_of(PyObject* object) const;
  /// An input whose memory is one block (`nbytes` from `first`) of dtype `dtype_id`, the array at
  /// `index`: later inputs lying in it are views into it (ArrayCapture::view_of).
  void note_block(std::uint32_t index, const std::byte* first, std::size_t nbytes, std::uint32_t dtype_id);
  /// The earlier input block of dtype `dtype_id` that holds the bytes [low, end), or none.
  struct Block {
    std::uint32_t index = 0;
    const std::byte* first = nullptr;
    std::size_t nbytes = 0;
    std::uint32_t dtype_id = 0;
  };
  const Block* block_holding(const std::byte* low, const std::byte* end, std::uint32_t dtype_id) const;
  bool in_outputs() const { return in_outputs_; }
  /// Appends `array` as the value for `object` and returns its index.
  std::uint32_t add_array(PyObject* object, core::ArrayCapture array);
  /// Appends a cleared array slot (with recycled buffers) as the value for `object`; fill it in.
  core::ArrayCapture& new_array(PyObject* object);
  void other(PyObject* object);
  /// {kind, repr} written as given: for objects whose repr is costly or has side effects.
  void other(std::string_view kind, std::string_view repr) { writer_.other(kind, repr); }

 private:
  void list(PyObject* sequence, int depth);
  void note_array(PyObject* object, std::uint32_t index);
  void value_at_depth(PyObject* object, int depth);
  std::uint32_t offset() const { return static_cast<std::uint32_t>(record_.values.size()); }

  core::CallRecord& record_;
  core::Recorder& recorder_;
  core::ValueWriter writer_;
  bool copy_data_;
  bool check_only_;
  bool checks_in_place_;
  bool stats_in_place_;
  bool inputs_may_be_written_ = false;
  bool queued_on_device_ = false;
  std::uint64_t ring_bytes_claimed_ = 0;
  bool outgrew_ring_ = false;
  bool in_outputs_ = false;
  // Set up at the first array large enough to share: most calls, and every call in other modes
  // than `stats`, never pay for constructing one.
  std::optional<core::StatsBatch> input_stats_, output_stats_;
  // This section's arrays: a few inline (no allocation per call), the rest in overflow_.
  static constexpr std::size_t kInlineSeen = 8;
  std::array<std::pair<PyObject*, std::uint32_t>, kInlineSeen> seen_{};
  std::size_t seen_count_ = 0;
  // The inputs' blocks that later inputs may view; a call with more shares no memory worth noting.
  static constexpr std::size_t kMaxBlocks = 4;
  std::array<Block, kMaxBlocks> blocks_{};
  std::size_t block_count_ = 0;
  std::vector<std::pair<PyObject*, std::uint32_t>> overflow_;
};

/// A capturer for one more kind of array-like object (torch.Tensor). Returns false when `object`
/// is not of its kind. Registered once, when that framework is hooked.
using ArrayLikeCapturer = bool (*)(ValueCapture& capture, PyObject* object);
void register_array_like_capturer(ArrayLikeCapturer capturer);

/// NumPy's capturer, asked before the others (NumPy arrays are the common value, and every other
/// framework's tensors convert to them): set once NumPy's C API is imported (numpy/api.cpp).
void set_numpy_capturer(ArrayLikeCapturer capturer);

}  // namespace ophook::py
