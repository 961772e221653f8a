#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/driver/backend.hpp"
#include "device/engine/device_requests.hpp"
#include "device/engine/device_ring.hpp"
#include "device/engine/staging_memory.hpp"
#include "device/kernel/statistics_kernel.hpp"

/// One device's statistics engine (device_engines.hpp and torch/devices/device_statistics.hpp say what it does for its callers): its
/// result slots, the launch being assembled and those in flight, the staging memory, its part of
/// the ring, and which `dump` reads are compared with which. Not thread-safe: the caller serialises
/// every call (the extension holds the GIL).
namespace ophook::device {

namespace k = statistics_kernel;

/// Blocks for a job of `units` (groups, or 16-byte vectors to copy).
std::uint32_t blocks_for(std::uint64_t units);

/// What the engines cost, for costs().
extern Costs engine_costs;

/// One device: its backend, its result slots, the launch being assembled and those in flight.
class DeviceEngine {
 public:
  /// `staging_bytes`: the host memory `dump`'s bytes cross into (StagingMemory), allocated at its
  /// first use.
  explicit DeviceEngine(std::unique_ptr<Backend> backend, std::uint64_t staging_bytes = std::uint64_t{256} << 20)
      : backend_(std::move(backend)), slots_(kSlots), staging_bytes_(staging_bytes) {
    free_.reserve(kSlots);
    for (std::uint32_t i = kSlots; i-- > 0;) free_.push_back(i);
  }

  Backend& backend() { return *backend_; }

  /// Sends the launch being assembled when a job on `stream` cannot join it: the next job's
  /// launch is then the one being assembled.
  void make_room(void* stream);

  /// A free result slot for the launch being assembled, with the room `copy` asks for the bytes
  /// (`job.copy_to`: in the device's ring, `slot.ring_ticket` then set; else in the staging
  /// memory); false when all slots or the staging memory are in use (`refused` then says which:
  /// Elsewhere, StagingFull, where records not yet written hold it, staging()->wait_for_room).
  /// A call's input in C order whose bytes the ring holds already from the read at its address in
  /// the launch before on the same stream (the call before's output, read again as this call's
  /// input: ring_read_to_share) is not copied again: it shares that read's room (ring_follows),
  /// and its bytes are known to be there only once both results are in and their fingerprints
  /// agree (holds_its_ring_bytes). A tensor the device's ring has no room for (larger than half
  /// its part, or than what its call leaves there) is not copied at all (`slot.ring_refused`): the
  /// ring could not keep it, and sending it to the host instead would cost the program the bus
  /// for bytes no trigger may ever want.
  bool take_slot(k::TensorJob& job, const CopyRequest& copy, void* stream, Slot& slot, Queued& refused);

  /// The slot of a job of the launch being assembled that reads the very elements `job`
  /// describes in the same order (the same address, kind and count, and both in C order or
  /// walked alike: the same shape, strides and C-order steps), asked for the same copy: that
  /// read's result answers both, since the jobs of one launch read at one moment. A view's
  /// output and its input (`view`, `reshape`, `detach`, `contiguous` of a contiguous tensor) are
  /// then read once. Only for requests without staged bytes (`dump`'s each go to their own
  /// record). False when there is none.
  bool share(const k::TensorJob& job, const CopyRequest& copy, Slot& slot);

  /// Adds `job` (its slot taken) to the launch being assembled on `stream`.
  void add(k::TensorJob job, void* stream);

  /// Whether the ring's room that slot `index`'s ticket names holds the bytes its read found: its
  /// own copy's, or the earlier read's it shares (ring_follows) where both found the same
  /// fingerprint. Once its result is in, before it is taken.
  bool holds_its_ring_bytes(std::uint32_t index);

  /// The copy into the ring that slot `index`'s job was given is not made after all (its call
  /// turned out larger than OPHOOK_RING_BYTES: the writer will not hold it), so that the bytes
  /// its room took over stay for the calls the writer holds: only while its launch is being
  /// assembled and no other read shares the slot. Its ring entry is settled as copied nothing.
  void withdraw_ring_copy(std::uint32_t index);

  /// The device's ring for the recorded calls, or (`check_part`) for the calls no level records.
  DeviceRing* ring(bool check_part) { return rings_[check_part ? 1 : 0]; }

  /// The staging memory, allocated at its first use; null when the backend has none.
  const std::shared_ptr<StagingMemory>& staging();

  /// Launches what is assembled (and the copy launch after it), recording its event.
  void launch();

  /// Before the first NaN's trigger writes the ring: waits for the launches still copying into it
  /// and settles their entries, so that the writer knows which bytes the gate kept (counted as
  /// synchronizations; once a run).
  void settle_ring();

  /// Whether the result of slot `index` is known to have landed without asking the driver (its
  /// launch is stamped, or done): ready() then asks no driver, which it may do while a CUDA graph
  /// is being captured.
  bool answers_unasked(std::uint32_t index) const;

  /// device_statistics::ready, wait, take and abandon for the slot `index`.
  bool ready(std::uint32_t index);
  void wait(std::uint32_t index);
  std::optional<k::Result> take(std::uint32_t index, const ConsumeBytes& consume_bytes);
  void abandon(std::uint32_t index);

 private:
  // Released: its result taken or given up, kept (result and staged bytes) for the later reads
  // compared with it (followers) until the last of them is released.
  enum class SlotState : std::uint8_t { Free, Used, Abandoned, Released };

  static constexpr std::uint32_t kNone = ~0u;  // no slot

  /// A result slot: what its job asked for and what keeps it.
  struct SlotEntry {
    SlotState state = SlotState::Free;
    std::uint64_t launch = 0;     // the launch that computes it
    std::shared_ptr<const core::SharedCopy> staged;  // its bytes in the staging memory (`dump`)
    std::uint64_t staged_bytes = 0;
    k::TensorJob copy_if_changed;  // flags has kCopyIfChanged when its bytes are copied only if changed
    std::uint64_t address = 0;  // of its tensor's bytes on the device
    void* stream = nullptr;
    std::uint32_t followers = 0;  // later reads compared with it (kHeldInSlot) not yet released
    std::uint32_t readers = 1;    // reads it answers (share): released when the last is taken or given up
    CopyRequest::To to = CopyRequest::To::Nowhere;  // with the ring's answer, for share()
    bool check_ring = false;
    std::uint64_t ring_ticket = 0;
    std::uint32_t ring_follows = kNone;  // the earlier read whose room in the ring it shares
    std::uint32_t kind = 0;              // its job's, for a later read that would share its room
    std::uint64_t count = 0;
    bool ring_refused = false;
    bool launch_failed = false;   // its result and bytes never came
  };

  /// A launch in flight (or failed), until all its slots are released. One that copies no bytes to
  /// the host is `stamped`: done once every job's stamp has landed beside its result (asked of no
  /// driver, and no event recorded for it). Its copies into the ring, in device memory, are done
  /// by then: each block copies its share before it arrives, and the last block to arrive writes
  /// the stamps. One that copies to the host (`dump`'s staging memory, and its copy launch after
  /// it) is done when its event has passed: that its bytes have all reached host memory is known
  /// only then.
  struct Launch {
    Backend::Event event = nullptr;
    void* stream = nullptr;  // a later launch on it starts only once this one has finished
    std::uint64_t stamp = 0;
    std::uint32_t arena_begin = 0, arena_end = 0;
    std::uint32_t open_slots = 0;  // results not yet taken or abandoned
    std::uint32_t jobs = 0;
    std::uint32_t slots[k::kJobsPerLaunch] = {};  // its jobs' result slots
    std::uint32_t landed = 0;                      // stamped: a bit per job whose stamp has landed
    bool stamped = false;
    bool done = false;
    bool failed = false;
  };

  /// Makes `job` (`bytes` staged, in C order) a kCopyIfChanged one where the host has or will
  /// have its bytes: compared with the latest read at its address still in flight (kHeldInSlot,
  /// may_follow; that read is kept until this one is released), else with the copy the host holds
  /// (copy.held). A read not compared with an earlier read is the one later reads there follow.
  void compare_with_earlier(k::TensorJob& job, const CopyRequest& copy, void* stream, std::uint64_t bytes);

  /// Whether `job` (`bytes` on `stream`) may be compared with `earlier`, the latest read followed
  /// at its address: not yet taken (a taken read's copy is the host's to hold), on the same stream
  /// (its result is there before the job's copy launch reads it), of as many bytes, and with bytes
  /// the host will have whatever the device finds: copied (no kCopyIfChanged), or compared with
  /// the very copy the host holds for the job too (the same fingerprint). One level only: a read
  /// compared with an earlier one is followed by none, so nothing is kept past the reads in flight.
  bool may_follow(std::uint32_t earlier, const k::TensorJob& job, void* stream, std::uint64_t bytes) const;

  /// The device's part of OPHOOK_RING_BYTES' ring (`bytes` for the calls the ring may write,
  /// `bytes / kCheckRingShare` after them for the calls no level records: `check_part`),
  /// allocated at its first use; null when its memory cannot be had (said once): the bytes then
  /// go to the host as in `dump`.
  DeviceRing* ring_for(std::uint64_t bytes, bool check_part);

  /// Before the ring's bytes that `launch` wrote are overwritten by a launch on `stream`: Never
  /// when it is the launch being assembled (its own jobs would write over each other), else Yes
  /// (the ring keeps them aside: the gate may stop the copies over them). One still running on
  /// another stream is waited for first, as for the arena.
  DeviceRing::Overwrite may_overwrite(std::uint64_t launch, void* stream);

  /// Tells the ring what became of slot `index`'s copy into it, once its result is in.
  void settle_ring_copy(std::uint32_t index);

  Launch& launch_of(std::uint32_t index) { return launches_[slots_[index].launch - first_launch_]; }

  /// Whether the launch has finished, asked without waiting; wait_for() waits for it, counted in
  /// the costs. A stamped launch's result slot is noted as landed before it can be taken, so that
  /// no slot is free for another launch (which would stamp it anew) while its own launch counts it.
  bool finished(Launch& entry);
  void wait_for(Launch& entry);
  /// Whether the result of slot `index` of `entry`, a stamped launch, has landed.
  bool landed(Launch& entry, std::uint32_t index);
  /// The launch is done (its event recycled).
  void finish(Launch& entry);
  /// The launch failed: its results and bytes never come (said once per run).
  void fail(Launch& entry, const std::string& why);

  static constexpr std::uint32_t kHeldByHost = ~0u, kLost = ~1u;

  /// The read at `job`'s address whose room in the ring `job` (a call's input, asked for the same
  /// part of it, on `stream`) may share: the latest there, if it copied into the ring, of as many
  /// elements of the same kind in C order, in flight on the same stream (its result lands before
  /// the job's), in the launch sent just before (the call before's: another tensor at the same
  /// address since would have been made by no recorded call; the launch being assembled may yet
  /// withdraw its copies). kNone: none.
  std::uint32_t ring_read_to_share(const k::TensorJob& job, const CopyRequest& copy, void* stream) const;

  /// The slot whose staged bytes are those of slot `index` (whose launch is done): its own where
  /// the device copied them; kHeldByHost where they are those of the copy the host holds for it;
  /// the earlier read's where it found them unchanged since that one (kHeldInSlot), or kHeldByHost
  /// where that one was found equal to the same held copy; kLost where that one's launch failed
  /// (the result compared with was not its own).
  std::uint32_t bytes_holder(std::uint32_t index) const;

  /// The slot's result is taken or given up: freed, unless later reads compared with it remain.
  void release(std::uint32_t index);

  /// Frees a released slot (its staged bytes too) once no later read compared with it is left;
  /// then the earlier read it was compared with may go.
  void free_when_unfollowed(std::uint32_t index);

  /// Frees the abandoned slots whose launches are done (asked, not waited for). Done at each
  /// launch: an abandoned slot keeps its launch, and every launch after it, in launches_, which
  /// reserve_arena reads through at each launch, so a slot left until the slots run out would grow
  /// that list by a launch per call (docs/performance.md, "Figures behind the code").
  void sweep_abandoned();

  /// Partials for the launch's blocks, past those of launches still running on other streams
  /// (waited for when the arena comes round to them). One on the launch's own stream is not
  /// waited for: it has finished before the launch starts. So a program that runs ahead of its
  /// GPU on one stream never waits here; waiting for every launch still running made a large model
  /// wait hundreds of times a step (docs/performance.md, "Figures behind the code").
  void reserve_arena(Launch& entry);

  std::unique_ptr<Backend> backend_;
  std::vector<SlotEntry> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> abandoned_;  // slots given up on, freed once their launches are done
  std::deque<Launch> launches_;
  std::uint64_t first_launch_ = 0, next_launch_ = 0;  // ids of launches_.front() and of the one assembled
  k::LaunchParams params_;
  std::uint32_t blocks_ = 0;
  // The latest read at each device address that later reads there may rely on until it is taken:
  // staged, to be compared with (compare_with_earlier); copied into the ring, to share its room
  // (ring_read_to_share).
  std::unordered_map<std::uint64_t, std::uint32_t> latest_at_;
  k::LaunchParams copies_;  // the kCopyIfChanged jobs of params_, for the launch right after it
  std::uint32_t copy_blocks_ = 0;
  void* stream_ = nullptr;
  std::uint64_t last_stream_switch_ = 0;  // the latest launch on another stream than the one before it
  std::uint64_t inputs_launch_ = 0;        // the stamp of the latest launch if it read judged inputs alone
  void* inputs_launch_stream_ = nullptr;
  std::uint32_t cursor_ = 0;
  std::shared_ptr<StagingMemory> staging_;
  std::uint64_t staging_bytes_;
  bool staging_tried_ = false;
  DeviceRing* rings_[2] = {nullptr, nullptr};  // for the recorded calls, for the calls no level records
  bool ring_tried_ = false;
};

}  // namespace ophook::device
