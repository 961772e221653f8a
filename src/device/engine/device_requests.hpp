#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device/kernel/statistics_kernel.hpp"
#include "ophook/capture/copy_memo.hpp"
#include "ophook/model/record.hpp"
#include "ophook/stats/element_widener.hpp"

/// What a caller asks of a device's statistics engine for one tensor and what it gets back
/// (docs/devices.md, "Statistics on a CUDA device"): the result slot, the copy of its bytes, why a
/// tensor was not queued, and what the engines cost.
namespace ophook::device {

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
  core::ElementWidener widen = nullptr;  // Ring: how its bytes become the file's when fetched
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

/// What take() hands a copied tensor's bytes to, with its result: the staging memory's copy of
/// them (StagingMemory: kept by holding it, no second copy), or null where they were not copied
/// for being those of the copy the host holds (CopyRequest::held).
using ConsumeBytes =
    std::function<void(const std::shared_ptr<const core::SharedCopy>&, const statistics_kernel::Result&)>;

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

}  // namespace ophook::device
