#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <dlpack/dlpack.h>

#include "ophook/copy_memo.hpp"
#include "ophook/record.hpp"
#include "ophook/statistics_kernel.hpp"
#include "torch/cuda/staging_memory.hpp"
#include "torch/float_formats.hpp"

/// Statistics of device tensors computed where they lie (docs/devices.md, "Statistics on a CUDA
/// device"): a call's tensors are queued here as they are captured and summarised by one kernel
/// launch on the current stream (launch_queued, after the call; before it too when the call may
/// write into its inputs). Each result lands in host memory; an event recorded after the launch
/// says when it is there, so nothing waits on the program's thread until a result is wanted.
/// CUDA devices go through the driver API and NVRTC, loaded when the first CUDA tensor is read;
/// OPHOOK_TENSOR_COPY=fake-device sends CPU tensors to the fake device instead. Every function
/// needs the GIL, which also guards the state kept here.
namespace ophook::py::device_statistics {

/// A queued tensor's result: which device, and which of its result slots.
struct Slot {
  static constexpr std::uint32_t kNone = ~0u;
  std::uint32_t device = kNone;
  std::uint32_t index = 0;
  std::uint64_t ring_ticket = 0;  // its bytes copied into the device's ring (ring_of), 0: not
  bool check_ring = false;        // into the ring's part for calls no level records
  bool ring_refused = false;      // the ring had no room for its bytes: statistics only
  bool valid() const { return device != kNone; }
};

/// What the kernel does with a tensor's bytes besides summarising them.
struct CopyRequest {
  enum class To : std::uint8_t {
    Nowhere,
    Host,  // `dump`: into host memory the device writes, then into the record
    Ring,  // OPHOOK_RING_BYTES' ring: into the device's part of it (DeviceRing); where that has no
         // room for them, nowhere (Slot::ring_refused); where the device has no ring, as Host
  };
  To to = To::Nowhere;
  std::uint64_t ring_bytes = 0;    // Ring: OPHOOK_RING_BYTES (the device's part: kCheckRingShare more)
  ElementWidener widen = nullptr;  // Ring: how its bytes become the file's when fetched
  bool check_only = false;         // Ring: a call no level records, judged soon and then kept only
                                   // if it is the culprit: its bytes go to the ring's smaller part
  bool may_share = false;          // Ring: a call's input, whose bytes the ring may hold already from
                                   // the read before at its place (DeviceEngine::ring_read_to_share)
  // Host, a tensor in C order whose bytes the host may have (core::copy_or_share remembers it):
  // they are copied by a second launch, and only if they changed since the latest read of them
  // still in flight, else since the copy the host holds (`held`: its fingerprint, core::held_copy).
  bool compare = false;
  const core::StagedFingerprint* held = nullptr;
  // statistics_kernel::kJudgedInput or kJudgedOutput: the tensor's part in a call OPHOOK_NAN
  // judges while the ring is in use and no culprit has been reported, for the ring's gate.
  std::uint32_t judged = 0;
};

/// The part of the ring on a device that holds the bytes of calls no level records (OPHOOK_NAN's
/// checks of backward passes' autograd nodes), beside OPHOOK_RING_BYTES for the calls the ring may write: they need
/// to last only until they are judged, and must not push the recorded calls' bytes out.
inline constexpr std::uint64_t kCheckRingShare = 4;  // a quarter of OPHOOK_RING_BYTES

enum class Queued : std::uint8_t {
  Yes,
  Elsewhere,  // no engine for this tensor (no driver or NVRTC, a shape the kernel does not take…): the generic path reads it
  Capturing,  // its stream is capturing a CUDA graph: not read now
  StagingFull,  // `dump`: records not yet written hold the staging memory its bytes need (wait_for_staging)
};

/// Queues the statistics of the tensor `view` (elements of kernel kind `kind`) and the copy of
/// its bytes in C order that `copy` asks for; `slot` says where its result will be and whether
/// the bytes went to the ring. `fake`: a CPU tensor for the fake device.
Queued queue(const DLTensor& view, std::uint32_t kind, bool fake, const CopyRequest& copy, Slot& slot);

/// `dump`, after Queued::StagingFull: waits, the GIL released, until the staging memory of
/// `view`'s device has room for `bytes`, while `more_coming()` says records holding some of it are
/// still to be written (counted in costs()). False when it has none and none is coming.
bool wait_for_staging(const DLTensor& view, bool fake, std::uint64_t bytes, const std::function<bool()>& more_coming);

/// The ring that holds the bytes of `slot` (queued with a ring ticket): for the record's array.
core::DeviceHeldBytes* ring_of(Slot slot);

/// Whether the ring's room `slot`'s ticket names holds the bytes `slot`'s read found (its own
/// copy, or an earlier read's whose room it shares, found alike: DeviceEngine::holds_its_ring_bytes).
/// Asked once its result is in, before take(); a shared room that does not is counted in costs().
bool holds_its_ring_bytes(Slot slot);

/// `slot`'s bytes are not copied into its device's ring after all, where its launch has not been
/// sent yet (DeviceEngine::withdraw_ring_copy): its call is larger than OPHOOK_RING_BYTES.
void withdraw_ring_copy(Slot slot);

/// The first NaN's culprit is judged and its trigger is about to write the ring: what each
/// device's ring kept is settled first (DeviceEngine::settle_ring).
void settle_ring();

/// Launches what is queued, one launch per device (per 12 tensors): after a call's tensors are
/// captured.
void launch_queued();

/// Counts the moments at which the program's code may have run since ophook last looked
/// (program_may_have_run: before a call's inputs are read, and after the call): a stream found not
/// capturing a CUDA graph is not asked again until the next, so a call asks the driver about its
/// stream twice at most, not once per tensor.
inline std::uint64_t program_moments = 0;
inline void program_may_have_run() noexcept { ++program_moments; }

/// Whether the result of `slot` is there (no waiting); wait() waits for it, counted as a
/// synchronisation in costs(). A launch that copies no bytes says so by the stamps beside its
/// results, asked of no driver; one that copies, by its event, not asked while a CUDA graph is
/// being captured on a current stream (may_poll): it is not ready then.
bool ready(Slot slot);
void wait(Slot slot);

/// Whether events may be asked about now: not while a CUDA graph is being captured on a current
/// stream, where querying an event could invalidate the program's capture.
bool may_poll();

/// What take() hands a copied tensor's bytes to, with its result: the staging memory's copy of
/// them (StagingMemory: kept by holding it, no second copy), or null where they were not copied
/// for being those of the copy the host holds (CopyRequest::held).
using ConsumeBytes =
    std::function<void(const std::shared_ptr<const core::SharedCopy>&, const statistics_kernel::Result&)>;

/// The result of `slot`, which must be ready or waited for; nullopt when its launch failed. A
/// copied tensor's bytes go to `consume_bytes` first. The slot is free afterwards.
std::optional<statistics_kernel::Result> take(Slot slot, const ConsumeBytes& consume_bytes = {});

/// Frees `slot` without its result (a record that goes back unwritten), once its launch is done.
void abandon(Slot slot);

/// What the engine cost and why it is not used where it is not, for summary.json.
struct Costs {
  std::uint64_t kernels_launched = 0, tensors_read = 0, bytes_read = 0, bytes_to_host = 0;
  std::uint64_t synchronizations = 0, wait_ns = 0, launch_failures = 0;
  std::uint64_t ring_bytes = 0;  // device memory held for OPHOOK_RING_BYTES' ring
  std::uint64_t ring_copies_skipped = 0;  // tensors the ring's gate kept out of it (or half out)
  std::uint64_t ring_copies_withdrawn = 0;  // tensors of calls larger than the ring, not copied into it
  std::uint64_t ring_bytes_copied = 0;  // into the ring, device to device (the gate may have skipped some)
  std::uint64_t ring_copies_shared = 0;  // tensors whose bytes the ring held from the read before at their place
  std::uint64_t ring_shares_changed = 0;  // of those, found changed in between (by no recorded call): no bytes
  std::uint64_t launches_held_most = 0;  // launches whose results were not all taken, at most at once
  std::uint64_t copies_unchanged = 0, bytes_unchanged = 0;  // `dump`: tensors not sent to the host again
  std::uint64_t reads_shared = 0;  // tensors answered by another read of the same elements in their launch
  std::uint64_t staging_waits = 0, staging_wait_ns = 0;  // for records to be written and give it back
  std::string devices;      // "cuda:0 sm_90", "fake"
  std::string unavailable;  // why a device has no engine
};
const Costs& costs();

}  // namespace ophook::py::device_statistics
