#include "torch/devices/device_path.hpp"

#include <memory>
#include <string>

#include "device/engine/device_engines.hpp"
#include "ophook/capture/strided_copy.hpp"
#include "ophook/log.hpp"
#include "recording/capture_budget.hpp"
#include "recording/value_capture.hpp"
#include "torch/devices/device_readback.hpp"
#include "torch/devices/device_statistics.hpp"
#include "torch/devices/held_records.hpp"
#include "torch/tensors/dense_view.hpp"
#include "torch/torch_device_module.hpp"

namespace ophook::py {

namespace {

// Tensors up to this size are snapshot on their device and read back in batches: their bytes cost
// less to bring over than the twenty-odd kernel launches of their statistics would.
constexpr std::size_t kSnapshotBytes = std::size_t{256} << 10;

PyRef call(PyObject* function, PyObject* first, PyObject* second) {
  PyObject* args[] = {first, second};
  return PyRef::steal(PyObject_Vectorcall(function, args, 2, nullptr));
}

Unread failed(std::string detail) { return {"reading it through torch failed: spec only", std::move(detail), false}; }

/// What the Python half answered: true when it read the tensor, else `unread` says why.
bool succeeded(const PyRef& result, Unread& unread) {
  if (!result) {
    unread = failed(take_python_error());
    return false;
  }
  return !as_unread(result.get(), unread);
}

bool floating(core::Recorder& recorder, const TorchDtype& dtype) {
  const auto& descr = recorder.dtype(dtype.dtype_id).descr;  // of the file: "<f4" for bfloat16
  return descr.size() > 1 && (descr[1] == 'f' || descr[1] == 'c');
}

/// Has torch copy `tensor` into the `size` bytes at `target`. False, with `unread` set, when it
/// did not; `kept` is then true when Python still holds the buffer, which must not be freed.
bool copy_into_buffer(PyObject* tensor, std::byte* target, std::size_t size, Unread& unread, bool& kept) {
  kept = false;
  PyRef view = PyRef::steal(
      PyMemoryView_FromMemory(reinterpret_cast<char*>(target), static_cast<Py_ssize_t>(size), PyBUF_WRITE));
  if (!view) {
    unread = failed(take_python_error());
    return false;
  }
  const bool copied = succeeded(call(torch_device_module().copy_into, tensor, view.get()), unread);
  if (PyRef released = PyRef::steal(PyObject_CallMethod(view.get(), "release", nullptr))) return copied;
  take_python_error();  // BufferError: a tensor made over the buffer is still alive
  kept = true;
  if (copied) unread = failed("the copy's buffer stayed in use");
  return false;
}

/// `dump`: the elements into the record, within OPHOOK_QUEUE_BYTES. torch copies them straight
/// into the record's buffer (no second host copy); bf16/fp8 go through a packed buffer and are
/// widened here, by the CPU path's own wideners, so both paths save the same bytes.
void copy_into_record(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype, core::ArrayCapture& out) {
  const auto count = core::element_count(out.shape);
  auto budget = reserve_copy(capture, count * dtype.saved_item_size);
  if (!budget.copy) {
    out.no_data_reason_id = budget.reason_id;
    return;
  }
  std::byte* dst = out.reserve_data(count * dtype.saved_item_size, std::move(budget.spare));
  std::unique_ptr<std::byte[]> packed;
  if (dtype.widen != nullptr) packed = std::make_unique_for_overwrite<std::byte[]>(count * dtype.item_size);
  Unread unread;
  bool kept = false;
  if (count > 0 && !copy_into_buffer(tensor, packed ? packed.get() : dst, count * dtype.item_size, unread, kept)) {
    if (kept) {
      (void)(packed ? packed.release() : out.data.release());  // leaked rather than freed under Python
      out.data_capacity = 0;
    }
    return report_unread(capture.record(), out, unread);
  }
  if (packed) dtype.widen(dst, packed.get(), count);
  out.captured = true;
  capture.recorder().counters().count_tensor_copied_by_torch();
}

/// Room within OPHOOK_QUEUE_BYTES for the bytes the kernel copies (`dump`), in the file's dtype,
/// and the record's buffer for them where they are copied out of the staging memory: small
/// arrays. Larger ones are lent where the device staged them. An array refused by the cap gives
/// its slot back and keeps the reason.
void reserve_for_copy(ValueCapture& capture, const TorchDtype& dtype, core::ArrayCapture& out,
                      device_readback::Readback& read) {
  const std::size_t saved_nbytes = read.count * dtype.saved_item_size;
  read.widen = dtype.widen;
  read.saved_nbytes = saved_nbytes;
  auto budget = reserve_copy(capture, saved_nbytes, !read.lent());
  if (!budget.copy) {
    out.no_data_reason_id = budget.reason_id;
    device::abandon(read.slot);
    read.slot = {};
    read.widen = nullptr;
    return;
  }
  if (!read.lent()) out.reserve_data(saved_nbytes, std::move(budget.spare));
  read.bytes = true;
}

/// After Queued::StagingFull: the held records go to the writer (their copies are given back as
/// they are written), then the program waits until the staging memory has room for `bytes`, as
/// it waits for room in the queue. False when nothing left to write holds it.
bool make_staging_room(ValueCapture& capture, const DLTensor& view, bool fake, std::uint64_t bytes) {
  device_readback::resolve_held();
  auto& recorder = capture.recorder();
  return device_statistics::wait_for_staging(view, fake, bytes, [&] { return recorder.bytes_queued() > 0; });
}

/// Whether a tensor whose bytes take `saved_nbytes` on the host once fetched leaves its call within
/// OPHOOK_RING_BYTES. The writer does not hold a call that takes more than the ring
/// (ArrayRing::too_large, as with CPU arrays), and its tensors' bytes would only push those of the
/// calls it holds out of the device's ring. So when the call outgrows the ring, the copies of its
/// earlier tensors not yet sent to the device are withdrawn and its later tensors copied nowhere.
/// Each counts in the record as the host will hold it (HeldOnDevice's saved_bytes, its source set
/// once the result is in): the writer finds the call too large as it would a CPU one, by the
/// record's footprint, which is asked for only once the call's bytes pass half the ring (it walks
/// every array, and a foreach call has hundreds).
bool fits_ring(ValueCapture& capture, core::ArrayCapture& out, std::size_t saved_nbytes) {
  out.on_device.saved_bytes = saved_nbytes;
  if (capture.outgrew_ring()) return false;
  const auto ring_bytes = capture.recorder().config().ring_bytes;
  // `out` joins the record once captured: its bytes are not in the footprint yet.
  if (capture.claim_ring_bytes(saved_nbytes) <= ring_bytes / 2 ||
      capture.record().footprint() + saved_nbytes <= ring_bytes) {
    return true;
  }
  capture.note_outgrew_ring();
  device_readback::withdraw_ring_copies(capture.record());
  return false;
}

/// Why a tensor the device's part of OPHOOK_RING_BYTES' ring had no room for has statistics and
/// no file (DeviceEngine::take_slot).
constexpr const char* kNoRoomInDeviceRing = "larger than the OPHOOK_RING_BYTES ring's room on its device: statistics only";

/// A CUDA tensor (a CPU one on the fake device) queued for ophook's kernel, one launch per call
/// (device_statistics): its statistics (`stats`, OPHOOK_NAN's counts in `trace`) or, in `dump`,
/// its bytes too, copied into host memory by the kernel and into the record once they are there,
/// within OPHOOK_QUEUE_BYTES — or, with OPHOOK_RING_BYTES' ring, into the device's part of the
/// ring, fetched by the writer only when a trigger writes it. False when the kernel does not take
/// it: the generic path reads it.
bool queue_on_device(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype, core::ArrayCapture& out,
                     device_readback::Readback& read) {
  // auto: CUDA tensors; fake-device: CPU tensors on the fake device; torch: none (all through torch).
  const auto tensor_copy = capture.recorder().config().tensor_copy;
  const bool fake = tensor_copy == core::TensorCopy::FakeDevice;
  DLTensor view;
  if (tensor_copy == core::TensorCopy::Torch || dtype.kernel_kind == 0 || !read_any_device_view(tensor, view) ||
      view.device.device_type != (fake ? kDLCPU : kDLCUDA)) {
    return false;
  }
  const auto& config = capture.recorder().config();
  using To = device::CopyRequest::To;
  // Bytes only for files (OPHOOK_DUMP_INCLUDE); while the first NaN's trigger is on its way, the
  // ring's bytes on the device stay put.
  const bool files = config.mode == core::Mode::Dump && capture.recorder().op(capture.record().op_id).dumped;
  const bool ring = core::uses_ring(config) && !capture.recorder().ring_trigger_pending();
  const bool outgrew_ring = files && ring && !fits_ring(capture, out, read.count * dtype.saved_item_size);
  const To to = !files || outgrew_ring ? To::Nowhere : ring ? To::Ring : To::Host;
  device::CopyRequest copy{to, config.ring_bytes, dtype.widen, capture.check_only()};
  copy.may_share = !capture.in_outputs();
  const auto& op = capture.recorder().op(capture.record().op_id);
  if (ring && config.nan != core::NanPolicy::Off && !op.uninitialized_output &&
      !capture.recorder().nonfinite_reported()) {
    // For the ring's gate: a culprit's outputs hold NaN/Inf, its inputs none (nor a NaN scalar).
    // Ops whose outputs are left uninitialised (torch.empty) are never judged.
    if (!capture.in_outputs()) {
      copy.judged = device::statistics_kernel::kJudgedInput;
    } else if (!capture.record().nonfinite_scalar_input) {
      copy.judged = device::statistics_kernel::kJudgedOutput;
    }
  }
  // In C order, its staged bytes are what lies at its address: an earlier record's copy of the
  // same bytes there is shared (as a CPU array's, which is copied the same way), and the device
  // sends the bytes only if they changed since the latest read there still in flight, or since
  // the copy the host holds. Bytes widened for the file (bf16, fp8) have no copy kept by address:
  // they are compared with a read in flight only.
  const auto ndim = static_cast<std::size_t>(view.ndim);
  const void* address = nullptr;
  core::HeldCopy held;
  if (to == To::Host && (view.strides == nullptr || core::is_c_order({view.shape, ndim}, {view.strides, ndim}))) {
    copy.compare = read.nbytes >= core::kSharedCopyMinBytes;
    if (dtype.widen == nullptr) address = static_cast<const std::byte*>(view.data) + view.byte_offset;
    if (copy.compare && address != nullptr) held = core::held_copy(address, read.nbytes);
    if (held.copy) copy.held = &held.fingerprint;
  }
  auto queued = device_statistics::queue(view, dtype.kernel_kind, fake, copy, read.slot);
  if (queued == device::Queued::StagingFull &&
      make_staging_room(capture, view, fake, read.count * dtype.item_size)) {
    queued = device_statistics::queue(view, dtype.kernel_kind, fake, copy, read.slot);
  }
  switch (queued) {
    case device::Queued::Yes:
      capture.note_queued_on_device();
      if (read.slot.ring_ticket != 0) {
        read.saved_nbytes = read.count * dtype.saved_item_size;  // fetched only when the ring is written
      } else if (read.slot.ring_refused) {
        out.no_data_reason_id = capture.recorder().intern(kNoRoomInDeviceRing);
      } else if (to != To::Nowhere) {
        reserve_for_copy(capture, dtype, out, read);
        read.address = address;
        read.held_copy = std::move(held.copy);
      }
      return true;
    case device::Queued::Capturing:
      out.on_device = {};  // not counted as bytes the ring will hold (fits_ring)
      report_unread(capture.record(), out, {"not read while a CUDA graph is being captured: spec only", "", false});
      return true;
    case device::Queued::Elsewhere:
    case device::Queued::StagingFull:
      return false;
  }
  return false;
}

}  // namespace

bool enable_device_path() {
  if (torch_device_module().loaded()) return true;
  if (!load_torch_device_module()) return false;
  core::Recorder::add_exit_hook(&device_readback::resolve_held_before_exit);
  device_readback::register_with_recording();
  return true;
}

device_readback::Readback read_through_torch(ValueCapture& capture, PyObject* tensor, const TorchDtype& dtype,
                                             core::ArrayCapture& out, bool lazy_bits) {
  device_readback::Readback read;
  read.count = core::element_count(out.shape);
  read.nbytes = read.count * dtype.item_size;
  if (!torch_device_module().loaded()) {
    report_unread(capture.record(), out, {"not readable through this torch: spec only", "", false});
    return read;
  }
  const auto mode = capture.recorder().config().mode;
  // Trace mode reads values only for OPHOOK_NAN's check, of floats alone.
  if (mode == core::Mode::Trace && !floating(capture.recorder(), dtype)) return read;
  if (!lazy_bits && queue_on_device(capture, tensor, dtype, out, read)) return read;
  if (read.nbytes > kSnapshotBytes && mode == core::Mode::Dump) {
    copy_into_record(capture, tensor, dtype, out);
    return read;
  }
  Unread unread;
  if (read.nbytes > kSnapshotBytes) {
    read.pending = call(torch_device_module().statistics, tensor, mode == core::Mode::Trace ? Py_True : Py_False);
  } else if (read.count > 0) {
    auto budget = reserve_copy(capture, read.count * dtype.saved_item_size);
    if (!budget.copy) {
      out.no_data_reason_id = budget.reason_id;
      return read;
    }
    out.reserve_data(read.count * dtype.saved_item_size, std::move(budget.spare));
    read.pending = PyRef::steal(PyObject_CallOneArg(torch_device_module().snapshot, tensor));
    read.bytes = true;
    read.widen = dtype.widen;
  } else {
    out.reserve_data(0);
    out.captured = true;  // no element to read
    capture.recorder().counters().count_tensor_copied_by_torch();
    return read;
  }
  if (!succeeded(read.pending, unread)) {
    read.pending = PyRef();
    report_unread(capture.record(), out, unread);
  }
  return read;
}

}  // namespace ophook::py
