#pragma once
#include "ophook/capture/capture_buffer_pool.hpp"
#include "ophook/export.hpp"
#include "ophook/stats/element_widener.hpp"
#include "ophook/stats/stats.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ophook::core {

/// The interception levels (README.md, "What is recorded").
/// Compiled: a kernel that torch.compile's Inductor launches (OPHOOK_COMPILE=record).
/// Collective: a c10d collective or point-to-point call (docs/ranks.md), recorded with either torch level.
enum class Level : std::uint8_t { Ufunc, UfuncMethod, ArrayFunction, TorchFunction, TorchDispatch, Compiled, Collective };
enum class Phase : std::uint8_t { None, Forward, Backward, Optimizer };
// How many of each there are, for tables indexed by them: a level or phase added above moves these.
inline constexpr std::size_t kLevelCount = static_cast<std::size_t>(Level::Collective) + 1;
inline constexpr std::size_t kPhaseCount = static_cast<std::size_t>(Phase::Optimizer) + 1;

OPHOOK_API std::string_view to_string(Level level);
OPHOOK_API std::string_view framework_of(Level level);  // "numpy" or "torch"
OPHOOK_API std::string_view to_string(Phase phase);     // "", "forward", "backward", "optimizer"

/// What an array value was in Python. Replay rebuilds the same: torch.from_numpy takes an ndarray,
/// and a NumPy scalar is saved as a 0-d array. `Buffer`: an object exporting the buffer protocol
/// with typed elements (a memoryview, an array.array, a Cython typed memoryview), recorded as the
/// array NumPy makes of it.
enum class ArrayType : std::uint8_t { Unknown, NumpyArray, NumpyScalar, TorchTensor, Buffer };

/// Where arrays' bytes wait on their device (OPHOOK_RING_BYTES' ring on a GPU, docs/devices.md):
/// they cross to the host only when a trigger writes the ring.
class DeviceHeldBytes {
 public:
  /// Copies the bytes held under `ticket`, in the file's dtype, into `dst` (`saved_bytes` of
  /// them). False when newer calls' bytes took their place on the device meanwhile, or the copy
  /// failed. The writer thread calls it, without the GIL.
  virtual bool fetch(std::uint64_t ticket, std::byte* dst, std::size_t saved_bytes) noexcept = 0;

 protected:
  ~DeviceHeldBytes() = default;
};

/// An array whose bytes are held on its device (`source` null: none).
struct HeldOnDevice {
  DeviceHeldBytes* source = nullptr;
  std::uint64_t ticket = 0;
  std::size_t saved_bytes = 0;  // in the file's dtype: the host memory they take once fetched
};

/// A copy of an array's bytes that several records read (copy_memo.hpp): made once, never
/// written after. Its bytes are in a buffer of CaptureBufferPool's, back to the pool when the last
/// record lets the copy go, or lent by memory another part owns (a device's staging memory, which
/// the device copied a tensor into for `dump`: no second copy on the host), given back then.
class SharedCopy {
 public:
  SharedCopy(std::unique_ptr<std::byte[]> bytes, std::size_t allocated) noexcept
      : owned_(std::move(bytes)), capacity_(allocated), bytes_(owned_.get()) {}
  /// `lent`'s deleter gives the bytes back, on whichever thread lets the copy go last (often the
  /// writer's): it must not need the GIL.
  explicit SharedCopy(std::shared_ptr<const std::byte> lent) noexcept : lent_(std::move(lent)), bytes_(lent_.get()) {}
  /// The `count` elements of `narrow`, a copy in a narrower dtype than the file's (a device's
  /// staged bfloat16 or float8), widened by `widen` into `nbytes` when they are first read: by the
  /// writer's threads, not by the program's. `narrow` is let go then.
  SharedCopy(std::shared_ptr<const SharedCopy> narrow, ElementWidener widen, std::size_t count,
             std::size_t nbytes) noexcept
      : narrow_(std::move(narrow)), widen_(widen), count_(count), capacity_(nbytes) {}
  SharedCopy(const SharedCopy&) = delete;
  SharedCopy& operator=(const SharedCopy&) = delete;
  ~SharedCopy() {
    if (owned_) CaptureBufferPool::give(std::move(owned_), capacity_);
  }

  /// Null only for a narrow copy for whose widened bytes no memory could be had.
  const std::byte* bytes() const noexcept {
    if (widen_ != nullptr && !widened_.load(std::memory_order_acquire)) widen_now();
    return bytes_;
  }

  /// Whether bytes() widens them first (on the first call): the writer calls it on its threads.
  bool widens() const noexcept { return widen_ != nullptr; }

  /// compute_stats(descr, bytes(), nbytes), computed once for the records that share the copy (the
  /// writer asks for each of them); again only for another dtype.
  OPHOOK_API ArrayStats stats(std::string_view descr, std::size_t nbytes) const;

 private:
  /// Widens a narrow copy's bytes once, whichever thread comes first. Not std::call_once: the core
  /// links its own libstdc++, whose once-call state the copies made by the extension (on the
  /// shared libstdc++) did not find when the shim was imported without the preload (a crash).
  OPHOOK_API void widen_now() const noexcept;

  // A narrow copy's are set once, by widen_now(), under widen_mutex_, before widened_ is.
  mutable std::shared_ptr<const SharedCopy> narrow_;
  ElementWidener widen_ = nullptr;
  std::size_t count_ = 0;
  mutable std::mutex widen_mutex_;
  mutable std::atomic<bool> widened_{false};
  mutable std::unique_ptr<std::byte[]> owned_;
  mutable std::size_t capacity_ = 0;
  std::shared_ptr<const std::byte> lent_;
  mutable const std::byte* bytes_ = nullptr;
  mutable std::mutex stats_mutex_;
  mutable std::string stats_descr_;
  mutable std::optional<ArrayStats> stats_;
};

/// One array or tensor argument/result. `data` holds the element bytes in C order, already in the
/// dtype that the file will have (bf16/fp8 widened to float32 by the capturing side); it is empty
/// in trace mode and for arrays that cannot be saved (then `no_data_reason` may say why).
struct ArrayCapture {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;    // in elements, only when not C-contiguous (set_strides)
  std::uint32_t dtype_id = 0;          // Recorder::intern_dtype
  std::uint32_t device_id = 0;         // interned string; 0 = "cpu"
  std::uint32_t no_data_reason_id = 0; // interned string; 0 = none
  std::int32_t alias_of = -1;          // the same object as an earlier array of this record
  /// Another object viewing the memory of an earlier array of this record, whose one block of
  /// memory holds all of this one's elements (np.matmul(x.T, x)): its element 0 lies
  /// `view_offset` elements past that array's. NumPy takes other paths for operands that share
  /// memory (BLAS syrk), so replay hands the op the same sharing. Noted where arrays are copied.
  std::int32_t view_of = -1;
  std::int64_t view_offset = 0;
  bool viewed = false;                  // a later array of this record is a view into this one
  /// A torch input that requires grad: kernels choose their path by it (an RNN, attention), so
  /// replay hands the op the same. Noted where arrays are copied.
  bool requires_grad = false;
  ArrayType python_type = ArrayType::Unknown;
  bool captured = false;                // bytes() holds all `nbytes` element bytes (maybe 0)
  std::unique_ptr<std::byte[]> data;
  /// The bytes as an earlier record copied them, unchanged since (then `data` is unused): read
  /// through bytes(), never written.
  std::shared_ptr<const SharedCopy> shared;
  std::size_t nbytes = 0;
  std::size_t data_capacity = 0;        // bytes allocated at `data` when reused (0 = exactly nbytes)
  /// Statistics computed where the values live (a tensor on its device, docs/devices.md): the
  /// writer uses them instead of computing statistics from `data`, which such an array lacks.
  std::optional<ArrayStats> given_stats;
  /// Its bytes, left on its device for the ring (`data` then empty until the writer fetches them).
  HeldOnDevice on_device;
  /// OPHOOK_NAN in `trace` mode: the caller's own bytes, `live_nbytes` of them densely packed,
  /// checked where they lie instead of copied. Valid only while the call runs; the writer never
  /// reads them.
  const std::byte* live = nullptr;
  std::size_t live_nbytes = 0;

  /// The captured element bytes, wherever they are kept.
  const std::byte* bytes() const noexcept { return shared ? shared->bytes() : data.get(); }

  /// A buffer of at least `n` bytes at `data`: `spare` when given (CaptureBufferPool), else the
  /// slot's own when big enough, else a fresh one; sets nbytes.
  OPHOOK_API std::byte* reserve_data(std::size_t n, SpareBuffer spare = {});

  /// Keeps the array's layout (`element_strides`, one per dimension of `shape`) when it is not
  /// C-contiguous, so that `ophook replay` can hand an op the same layout: a kernel's result may
  /// depend on it (a sum over a transposed view, BLAS with a transposed operand). Set `shape` first.
  OPHOOK_API void set_strides(std::span<const std::int64_t> element_strides);

  /// Back to an empty capture that keeps its shape and data buffers.
  void reset() noexcept {
    shape.clear();
    strides.clear();
    dtype_id = device_id = no_data_reason_id = 0;
    alias_of = view_of = -1;
    view_offset = 0;
    viewed = false;
    requires_grad = false;
    python_type = ArrayType::Unknown;
    captured = false;
    nbytes = 0;
    given_stats.reset();
    shared.reset();
    on_device = {};
    live = nullptr;
    live_nbytes = 0;
  }
};

/// A record's arrays, in order. Clearing a record leaves its slots constructed, with their shape
/// and data buffers, and the record's next use fills them in place: no move and no allocation per
/// array, and the writer, which clears records, writes into no slot of a `trace` record (the
/// program's thread then finds the slots as it left them, not as the other core last wrote them).
class ArraySlots {
 public:
  std::size_t size() const noexcept { return used_; }
  bool empty() const noexcept { return used_ == 0; }
  ArrayCapture& operator[](std::size_t i) noexcept { return slots_[i]; }
  const ArrayCapture& operator[](std::size_t i) const noexcept { return slots_[i]; }
  ArrayCapture* begin() noexcept { return slots_.data(); }
  ArrayCapture* end() noexcept { return slots_.data() + used_; }
  const ArrayCapture* begin() const noexcept { return slots_.data(); }
  const ArrayCapture* end() const noexcept { return slots_.data() + used_; }

  /// The next slot, empty, with the buffers of its last use.
  ArrayCapture& add() {
    if (used_ == slots_.size()) slots_.emplace_back();
    auto& slot = slots_[used_++];
    slot.reset();
    return slot;
  }
  void push_back(ArrayCapture&& array) { add() = std::move(array); }
  void reserve(std::size_t n) { slots_.reserve(n); }

  /// Frees every slot: buffers over `kept_buffer_bytes` are dropped, slots beyond `kept_slots` too.
  void clear(std::size_t kept_buffer_bytes, std::size_t kept_slots) noexcept;
  /// Bytes the slots and their buffers hold.
  std::size_t footprint() const noexcept;

 private:
  std::vector<ArrayCapture> slots_;
  std::size_t used_ = 0;
};

/// A collective's place in its process group (level collective; docs/ranks.md): the group, its
/// ranks, and how many collectives this process had issued on the group before this one.
struct CollectiveFacts {
  static constexpr std::int32_t kNoPeer = -1;
  std::uint32_t group_id = 0;  // interned group name; 0: the record is no collective
  std::uint32_t ranks_id = 0;  // interned JSON list of the group's global ranks, "[0,1,2,3]"
  std::uint64_t group_seq = 0;  // the collective's number in its group, from 1, as every member counts them
  std::int32_t peer = kNoPeer;  // send's dst, recv's src, a rooted collective's root (global rank)
  bool async = false;      // issued with async_op (DDP's buckets): its caller went on before it completed
  bool completed = true;   // false: the run ended before its work completed (outputs not read)
  bool received_nonfinite = false;  // its outputs hold NaN/Inf its inputs did not: received, no culprit
};

/// Everything known about one recorded call, built on the program's thread without formatting and
/// handed to the writer thread, which owns it from then on.
struct CallRecord {
  std::uint64_t seq = 0;
  std::uint32_t op_id = 0;
  Phase phase = Phase::None;
  bool overridden = false;
  bool has_error = false;
  bool nonfinite_new = false;  // OPHOOK_NAN: outputs hold NaN/Inf, inputs did not
  bool nonfinite_scalar_input = false;  // a float argument is NaN/Inf: such outputs are not fresh
  bool ring_trigger = false;  // not a call: a request to write OPHOOK_RING_BYTES' ring (`error` says why)
  bool nonfinite_expected = false;  // fresh NaN/Inf the program declared it expects (np.errstate)
  /// A torch call with an input that requires grad, made with grad mode off (torch.no_grad): replay
  /// runs it so. Noted where arrays are copied, with ArrayCapture::requires_grad.
  bool grad_disabled = false;
  std::uint16_t depth = 0;      // recorded calls of the same level enclosing this one
  static constexpr std::uint64_t kNoParent = ~std::uint64_t{0};
  std::uint64_t parent = kNoParent;  // seq of the innermost recorded call (any level) enclosing it
  std::uint64_t step = 0;            // optimizer steps completed before the call
  std::int64_t t_ns = 0;
  std::int64_t dur_ns = 0;
  std::int32_t tid = 0;
  std::uint32_t source_file_id = 0;  // 0 = no source (then "source": null)
  std::uint32_t source_func_id = 0;
  std::int32_t source_line = 0;
  std::uint32_t module_id = 0;       // 0 = null
  /// A backward culprit's autograd node: the forward call that made it (0 = unknown / none).
  std::uint32_t forward_file_id = 0, forward_func_id = 0;
  std::int32_t forward_line = 0;
  CollectiveFacts collective;        // level collective only
  std::string error;                 // "Type: message" when has_error
  /// args, then kwargs (Key/value pairs), then outputs, encoded by ValueWriter.
  std::vector<std::uint8_t> values;
  std::uint32_t kwargs_offset = 0;
  std::uint32_t outputs_offset = 0;
  ArraySlots arrays;

  /// Bytes this record holds, for the queue's memory cap.
  OPHOOK_API std::size_t footprint() const;

  /// An empty array slot appended to `arrays`, reusing the shape and data buffers of an earlier
  /// use of this record (see RecordPool) so that a steady stream of calls allocates nothing.
  ArrayCapture& new_array() { return arrays.add(); }

  /// Back to a default-constructed record, keeping buffers of modest size for reuse.
  OPHOOK_API void clear_for_reuse() noexcept;

  // Owned by RecordQueue / RecordPool while the record waits there.
  CallRecord* next_in_chain = nullptr;
  std::size_t queued_bytes = 0;  // footprint() when pushed: what release() frees
};

using RecordPtr = std::unique_ptr<CallRecord>;

/// How an interned dtype is described in trace.jsonl and saved in files.
struct DtypeInfo {
  std::string name;        // "float32", "bfloat16", "datetime64[ns]", "<U3"…
  std::string descr;       // npy descr of the saved bytes ("<f4"); empty = no file can be written
  std::string saved_name;  // set when the file's dtype differs from `name` ("float32" for bf16)
};

}  // namespace ophook::core
