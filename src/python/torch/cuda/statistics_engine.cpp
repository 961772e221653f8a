#include "torch/cuda/statistics_engine.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ophook/log.hpp"
#include "torch/cuda/backend.hpp"
#include "torch/cuda/device_ring.hpp"
#include "torch/dense_view.hpp"
#include "torch/device_path.hpp"

namespace ophook::py::device_statistics {
namespace {

namespace k = statistics_kernel;

constexpr std::uint64_t kNotStaged = ~std::uint64_t{0};

// Threads per block times the groups each thread takes before a tensor gets another block: small
// tensors get one block, large ones up to kMaxBlocksPerJob.
constexpr std::uint64_t kGroupsPerBlock = std::uint64_t{k::kThreads} * 4;

/// Blocks for a job of `units` (groups, or 16-byte vectors to copy).
std::uint32_t blocks_for(std::uint64_t units) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>((units + kGroupsPerBlock - 1) / kGroupsPerBlock, 1, k::kMaxBlocksPerJob));
}

// Released: its result taken or given up, kept (result and staged bytes) for the later reads
// compared with it (followers) until the last of them is released.
enum class SlotState : std::uint8_t { Free, Used, Abandoned, Released };

struct SlotEntry {
  SlotState state = SlotState::Free;
  std::uint64_t launch = 0;     // the launch that computes it
  std::uint64_t staged = kNotStaged;  // offset of its bytes in the staging memory (`dump`)
  std::uint64_t staged_bytes = 0;
  k::TensorJob copy_if_changed;  // flags has kCopyIfChanged when its bytes are copied only if changed
  std::uint64_t address = 0;  // of its tensor's bytes on the device
  void* stream = nullptr;
  std::uint32_t followers = 0;  // later reads compared with it (kHeldInSlot) not yet released
  bool launch_failed = false;   // its result and bytes never came
};

/// The staging memory's ranges in use, oldest first: a ring, since records complete in about
/// the order their tensors were queued.
class StagingRing {
 public:
  /// An offset for `n` bytes (16-byte aligned), or kNotStaged when the ring has no room for them.
  std::uint64_t take(std::uint64_t n) {
    n = (n + 15) & ~std::uint64_t{15};
    while (!ranges_.empty() && ranges_.front().released) ranges_.pop_front();
    if (ranges_.empty()) head_ = 0;
    const std::uint64_t tail = ranges_.empty() ? kStagingBytes : ranges_.front().begin;
    std::uint64_t begin = kNotStaged;
    if (ranges_.empty() || head_ > tail) {
      if (head_ + n <= kStagingBytes) {
        begin = head_;
      } else if (!ranges_.empty() && n < tail) {
        begin = 0;  // wrap round, short of the oldest range
      }
    } else if (head_ + n < tail) {
      begin = head_;
    }
    if (begin == kNotStaged) return kNotStaged;
    ranges_.push_back({begin, n, false});
    head_ = begin + n;
    return begin;
  }

  void release(std::uint64_t begin) {
    for (auto& range : ranges_) {
      if (range.begin == begin && !range.released) {
        range.released = true;
        break;
      }
    }
    while (!ranges_.empty() && ranges_.front().released) ranges_.pop_front();
  }

 private:
  struct Range {
    std::uint64_t begin, size;
    bool released;
  };
  std::deque<Range> ranges_;
  std::uint64_t head_ = 0;
};

struct Launch {
  Backend::Event event = nullptr;
  std::uint32_t arena_begin = 0, arena_end = 0;
  std::uint32_t open_slots = 0;  // results not yet taken or abandoned
  bool done = false;
  bool failed = false;
};

Costs engine_costs;

/// One device: its backend, its result slots, the launch being assembled and those in flight.
class DeviceEngine {
 public:
  explicit DeviceEngine(std::unique_ptr<Backend> backend) : backend_(std::move(backend)), slots_(kSlots) {
    free_.reserve(kSlots);
    for (std::uint32_t i = kSlots; i-- > 0;) free_.push_back(i);
  }

  Backend& backend() { return *backend_; }

  /// Sends the launch being assembled when a job on `stream` cannot join it: the next job's
  /// launch is then the one being assembled.
  void make_room(void* stream) {
    if (params_.jobs > 0 && (stream != stream_ || params_.jobs == k::kJobsPerLaunch)) launch();
  }

  /// A free result slot for the launch being assembled, with the room `copy` asks for the bytes
  /// (`job.copy_to`: in the device's ring, `slot.ring_ticket` then set; else in the staging
  /// memory); false when all slots or the staging memory are in use. A tensor the device's ring
  /// has no room for (larger than half its part, or than what its call leaves there) is not
  /// copied at all (`slot.ring_refused`): the ring could not keep it, and sending it to the host
  /// instead would cost the program the bus for bytes no trigger may ever want.
  bool take_slot(k::TensorJob& job, const CopyRequest& copy, void* stream, Slot& slot) {
    if (free_.empty()) sweep_abandoned();
    if (free_.empty()) return false;
    const std::uint64_t bytes = copy.to == CopyRequest::To::Nowhere ? 0 : job.count * k::item_size(job.kind);
    if (copy.to == CopyRequest::To::Ring && bytes > 0) {
      if (DeviceRing* ring = ring_for(copy.ring_bytes, copy.check_only)) {
        const auto place = ring->take(bytes, job.count, copy.widen, next_launch_,
                                      [this](std::uint64_t launch) { return let_finish(launch); });
        if (place) {
          job.copy_to = place->device_address, slot.ring_ticket = place->ticket;
        } else {
          slot.ring_refused = true;
        }
      }
    }
    std::uint64_t staged = kNotStaged;
    if (bytes > 0 && slot.ring_ticket == 0 && !slot.ring_refused) {
      std::uint64_t device_address = 0;
      if (backend_->staging(device_address) == nullptr || bytes > kStagingBytes / 2) return false;
      staged = staging_.take(bytes);
      if (staged == kNotStaged) {
        sweep_abandoned();  // abandoned copies may hold the staging memory
        staged = staging_.take(bytes);
      }
      if (staged == kNotStaged) return false;
      job.copy_to = device_address + staged;
    }
    job.slot = free_.back();
    free_.pop_back();
    if (staged != kNotStaged && copy.compare && (job.flags & k::kContiguous)) compare_with_earlier(job, copy, stream, bytes);
    slots_[job.slot] = {SlotState::Used, next_launch_, staged, staged == kNotStaged ? 0 : bytes,
                        (job.flags & k::kCopyIfChanged) ? job : k::TensorJob{}, job.data, stream};
    return true;
  }

  /// Makes `job` (`bytes` staged, in C order) a kCopyIfChanged one where the host has or will
  /// have its bytes: compared with the latest read at its address still in flight (kHeldInSlot,
  /// may_follow; that read is kept until this one is released), else with the copy the host holds
  /// (copy.held). A read not compared with an earlier read is the one later reads there follow.
  void compare_with_earlier(k::TensorJob& job, const CopyRequest& copy, void* stream, std::uint64_t bytes) {
    if (copy.held != nullptr) {
      job.flags |= k::kCopyIfChanged;
      job.held_position = copy.held->position, job.held_by_value = copy.held->by_value;
    }
    const auto [at, fresh] = latest_at_.try_emplace(job.data, job.slot);
    if (!fresh && may_follow(at->second, job, stream, bytes)) {
      job.flags |= k::kCopyIfChanged | k::kHeldInSlot;
      job.held_slot = at->second;
      ++slots_[at->second].followers;
      return;
    }
    at->second = job.slot;
  }

  /// Whether `job` (`bytes` on `stream`) may be compared with `earlier`, the latest read followed
  /// at its address: not yet taken (a taken read's copy is the host's to hold), on the same stream
  /// (its result is there before the job's copy launch reads it), of as many bytes, and with bytes
  /// the host will have whatever the device finds: copied (no kCopyIfChanged), or compared with
  /// the very copy the host holds for the job too (the same fingerprint). One level only: a read
  /// compared with an earlier one is followed by none, so nothing is kept past the reads in flight.
  bool may_follow(std::uint32_t earlier, const k::TensorJob& job, void* stream, std::uint64_t bytes) const {
    const auto& slot = slots_[earlier];
    if (slot.state != SlotState::Used || slot.stream != stream || slot.staged_bytes != bytes) return false;
    const auto& then = slot.copy_if_changed;
    if (!(then.flags & k::kCopyIfChanged)) return true;
    return (job.flags & k::kCopyIfChanged) && then.held_position == job.held_position &&
           then.held_by_value == job.held_by_value;
  }

  void add(k::TensorJob job, void* stream) {
    stream_ = stream;
    job.first_block = blocks_;
    params_.job[params_.jobs++] = job;
    blocks_ += job.blocks;
    if (job.flags & k::kCopyIfChanged) {
      job.first_block = copy_blocks_;
      job.blocks = blocks_for(job.count * k::item_size(job.kind) / 16);
      copies_.job[copies_.jobs++] = job;
      copy_blocks_ += job.blocks;
    }
  }

  DeviceRing* ring(bool check_part) { return rings_[check_part ? 1 : 0]; }

  void launch() {
    if (params_.jobs == 0) return;
    Launch entry;
    entry.open_slots = params_.jobs;
    reserve_arena(entry);
    for (std::uint32_t j = 0; j < params_.jobs; ++j) params_.job[j].partials = entry.arena_begin + params_.job[j].first_block;
    std::string why;
    entry.failed = !backend_->launch(Backend::Kernel::Statistics, params_, blocks_, stream_, why) ||
                   (copies_.jobs > 0 && !backend_->launch(Backend::Kernel::CopyChanged, copies_, copy_blocks_, stream_, why));
    if (!entry.failed) entry.event = backend_->record(stream_);
    if (entry.failed || entry.event == nullptr) {
      entry.failed = entry.done = true;
      for (std::uint32_t j = 0; j < params_.jobs; ++j) slots_[params_.job[j].slot].launch_failed = true;
      if (engine_costs.launch_failures++ == 0) {
        core::logger().warn("the statistics kernel could not run ({}): those tensors are recorded without values",
                            why.empty() ? "no event could be recorded" : why);
      }
    } else {
      engine_costs.kernels_launched += copies_.jobs > 0 ? 2 : 1;
      engine_costs.tensors_read += params_.jobs;
      for (std::uint32_t j = 0; j < params_.jobs; ++j) {
        engine_costs.bytes_read += params_.job[j].count * k::item_size(params_.job[j].kind);
      }
    }
    launches_.push_back(entry);
    ++next_launch_;
    params_.jobs = copies_.jobs = 0;
    blocks_ = copy_blocks_ = 0;
    if (!abandoned_.empty()) sweep_abandoned();
    engine_costs.launches_held_most = std::max<std::uint64_t>(engine_costs.launches_held_most, launches_.size());
  }

  bool ready(std::uint32_t index) {
    if (slots_[index].launch == next_launch_) return false;  // not launched yet
    Launch& entry = launch_of(index);
    if (!entry.done && backend_->finished(entry.event)) finish(entry);
    return entry.done;
  }

  void wait(std::uint32_t index) {
    if (slots_[index].launch == next_launch_) launch();
    Launch& entry = launch_of(index);
    if (!entry.done) wait_for(entry);
  }

  std::optional<k::Result> take(std::uint32_t index, const std::function<void(const std::byte*, const statistics_kernel::Result&)>& consume_bytes) {
    Launch& entry = launch_of(index);
    std::optional<k::Result> result;
    if (!entry.failed) {
      result = backend_->results()[index];
      engine_costs.bytes_to_host += sizeof(k::Result);
      const auto& slot = slots_[index];
      const std::uint32_t holder = slot.staged != kNotStaged && consume_bytes ? bytes_holder(index) : index;
      if (holder == kLost) {
        result.reset();  // compared with an earlier read whose launch failed: its bytes never came
      } else if (slot.staged != kNotStaged && consume_bytes) {
        if (holder == kHeldByHost) {
          consume_bytes(nullptr, *result);
        } else {
          std::uint64_t device_address = 0;
          consume_bytes(backend_->staging(device_address) + slots_[holder].staged, *result);
        }
        if (holder == index) {
          engine_costs.bytes_to_host += slot.staged_bytes;
        } else {
          ++engine_costs.copies_unchanged;
          engine_costs.bytes_unchanged += slot.staged_bytes;
        }
      }
    }
    release(index);
    return result;
  }

  void abandon(std::uint32_t index) {
    if (slots_[index].state == SlotState::Abandoned) return;
    slots_[index].state = SlotState::Abandoned;
    abandoned_.push_back(index);
  }

 private:
  /// The device's part of OPHOOK_RING_BYTES' ring (`bytes` for the calls the ring may write,
  /// `bytes / kCheckRingShare` after them for the calls no level records: `check_part`),
  /// allocated at its first use; null when its memory cannot be had (said once): the bytes then
  /// go to the host as in `dump`.
  DeviceRing* ring_for(std::uint64_t bytes, bool check_part) {
    if (!ring_tried_) {
      ring_tried_ = true;
      const std::uint64_t check_bytes = bytes / kCheckRingShare;
      std::string why;
      const std::uint64_t address = backend_->ring_memory(bytes + check_bytes, why);
      if (address == 0) {
        core::logger().warn("the OPHOOK_RING_BYTES ring keeps tensors' bytes on the host, not on their device: {}", why);
      } else {
        // Never freed: the writer may fetch from them until the end.
        rings_[0] = new DeviceRing(*backend_, address, bytes);
        rings_[1] = new DeviceRing(*backend_, address + bytes, check_bytes);
        engine_costs.ring_bytes += bytes + check_bytes;
      }
    }
    return ring(check_part);
  }

  /// Before the ring's bytes that `launch` wrote are overwritten: false when it is the launch
  /// being assembled (its own jobs would write over each other); else true once it has finished.
  bool let_finish(std::uint64_t launch) {
    if (launch >= next_launch_) return false;
    if (launch < first_launch_) return true;  // finished and forgotten
    Launch& entry = launches_[launch - first_launch_];
    if (entry.done) return true;
    if (backend_->finished(entry.event)) {
      finish(entry);
    } else {
      wait_for(entry);
    }
    return true;
  }

  Launch& launch_of(std::uint32_t index) { return launches_[slots_[index].launch - first_launch_]; }

  void finish(Launch& entry) {
    entry.done = true;
    backend_->recycle(entry.event);
    entry.event = nullptr;
  }

  void wait_for(Launch& entry) {
    const auto start = std::chrono::steady_clock::now();
    backend_->wait(entry.event);
    ++engine_costs.synchronizations;
    engine_costs.wait_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    finish(entry);
  }

  static constexpr std::uint32_t kHeldByHost = ~0u, kLost = ~1u;

  /// The slot whose staged bytes are those of slot `index` (whose launch is done): its own where
  /// the device copied them; kHeldByHost where they are those of the copy the host holds for it;
  /// the earlier read's where it found them unchanged since that one (kHeldInSlot), or kHeldByHost
  /// where that one was found equal to the same held copy; kLost where that one's launch failed
  /// (the result compared with was not its own).
  std::uint32_t bytes_holder(std::uint32_t index) const {
    const auto* results = backend_->results();
    const auto& job = slots_[index].copy_if_changed;
    if (!(job.flags & k::kCopyIfChanged) || !k::unchanged(job, results)) return index;
    if (!(job.flags & k::kHeldInSlot)) return kHeldByHost;
    const std::uint32_t earlier = job.held_slot;
    if (slots_[earlier].launch_failed) return kLost;
    const auto& then = slots_[earlier].copy_if_changed;
    return (then.flags & k::kCopyIfChanged) && k::unchanged(then, results) ? kHeldByHost : earlier;
  }

  void release(std::uint32_t index) {
    Launch& entry = launch_of(index);
    --entry.open_slots;
    slots_[index].state = SlotState::Released;
    if (const auto at = latest_at_.find(slots_[index].address); at != latest_at_.end() && at->second == index) {
      latest_at_.erase(at);
    }
    free_when_unfollowed(index);
    while (!launches_.empty() && launches_.front().done && launches_.front().open_slots == 0) {
      launches_.pop_front();
      ++first_launch_;
    }
  }

  /// Frees a released slot (its staged bytes too) once no later read compared with it is left;
  /// then the earlier read it was compared with may go.
  void free_when_unfollowed(std::uint32_t index) {
    auto& slot = slots_[index];
    if (slot.state != SlotState::Released || slot.followers > 0) return;
    if (slot.staged != kNotStaged) staging_.release(slot.staged);
    const bool followed = (slot.copy_if_changed.flags & k::kHeldInSlot) != 0;
    const std::uint32_t earlier = slot.copy_if_changed.held_slot;
    slot = SlotEntry{};
    free_.push_back(index);
    if (followed && --slots_[earlier].followers == 0) free_when_unfollowed(earlier);
  }

  /// Frees the abandoned slots whose launches are done (asked, not waited for). Done at each
  /// launch: an abandoned slot keeps its launch, and every launch after it, in launches_, which
  /// reserve_arena reads through at each launch (an abandoned slot left until the slots ran out
  /// grew it by a launch per call: 32,000 after 20 steps of a small GPT-2).
  void sweep_abandoned() {
    std::erase_if(abandoned_, [&](std::uint32_t i) {
      if (slots_[i].launch == next_launch_ || !ready(i)) return false;
      release(i);
      return true;
    });
  }

  /// Partials for the launch's blocks, past those of launches still running (waited for when the
  /// arena comes round to them).
  void reserve_arena(Launch& entry) {
    if (cursor_ + blocks_ > kArenaPartials) cursor_ = 0;
    entry.arena_begin = cursor_;
    entry.arena_end = cursor_ + blocks_;
    cursor_ = entry.arena_end;
    for (auto& running : launches_) {
      const bool overlaps = running.arena_begin < entry.arena_end && entry.arena_begin < running.arena_end;
      if (!overlaps || running.done) continue;
      if (backend_->finished(running.event)) {
        finish(running);
      } else {
        wait_for(running);
      }
    }
  }

  std::unique_ptr<Backend> backend_;
  std::vector<SlotEntry> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> abandoned_;  // slots given up on, freed once their launches are done
  std::deque<Launch> launches_;
  std::uint64_t first_launch_ = 0, next_launch_ = 0;  // ids of launches_.front() and of the one assembled
  k::LaunchParams params_;
  std::uint32_t blocks_ = 0;
  // The latest read staged at each device address that later reads there may be compared with
  // (compare_with_earlier), until it is taken.
  std::unordered_map<std::uint64_t, std::uint32_t> latest_at_;
  k::LaunchParams copies_;  // the kCopyIfChanged jobs of params_, for the launch right after it
  std::uint32_t copy_blocks_ = 0;
  void* stream_ = nullptr;
  std::uint32_t cursor_ = 0;
  StagingRing staging_;
  DeviceRing* rings_[2] = {nullptr, nullptr};  // for the recorded calls, for the calls no level records
  bool ring_tried_ = false;
};

/// Engines by device: index 0 the fake device, 1 + ordinal the CUDA devices; null where there is
/// none (tried once).
std::vector<std::unique_ptr<DeviceEngine>> engines;
std::vector<bool> tried;

// A forked child cannot use its parent's CUDA context: it forgets the engines (leaked, not
// destroyed: freeing their device memory there would fail) and starts afresh if it meets a tensor.
const bool fork_handler_registered = [] {
  pthread_atfork(nullptr, nullptr, [] {
    for (auto& engine : engines) (void)engine.release();
    engines.clear();
    tried.clear();
  });
  return true;
}();

DeviceEngine* engine_for(bool fake, int ordinal, std::uint32_t& device) {
  device = fake ? 0 : 1 + static_cast<std::uint32_t>(ordinal);
  if (device >= engines.size()) engines.resize(device + 1), tried.resize(device + 1);
  if (tried[device]) return engines[device].get();
  tried[device] = true;
  std::string why;
  auto backend = fake ? make_fake_backend() : make_cuda_backend(ordinal, nvrtc_libraries(), why);
  const std::string name = fake ? std::string("fake") : "cuda:" + std::to_string(ordinal);
  if (!backend) {
    engine_costs.unavailable = name + ": " + why;
    core::logger().warn("statistics of tensors on {} are computed through torch, not by ophook's kernel: {}", name, why);
    return nullptr;
  }
  engine_costs.devices += (engine_costs.devices.empty() ? "" : ", ") + name;
  engines[device] = std::make_unique<DeviceEngine>(std::move(backend));
  return engines[device].get();
}

/// The kernel's description of `view`; false when it takes no such tensor.
bool describe(const DLTensor& view, std::uint32_t kind, k::TensorJob& job) {
  if (view.ndim < 0 || static_cast<std::uint32_t>(view.ndim) > k::kMaxDims) return false;
  job.kind = kind;
  job.ndim = static_cast<std::uint32_t>(view.ndim);
  job.data = reinterpret_cast<std::uintptr_t>(view.data) + view.byte_offset;
  job.count = 1;
  bool contiguous = true;
  std::int64_t expected = 1;
  for (std::uint32_t d = job.ndim; d-- > 0;) {
    job.sizes[d] = view.shape[d];
    job.strides[d] = view.strides != nullptr ? view.strides[d] : expected;
    if (job.sizes[d] != 1 && job.strides[d] != expected) contiguous = false;
    expected *= view.shape[d];
    job.count *= static_cast<std::uint64_t>(view.shape[d]);
  }
  k::set_grouping(job, contiguous);
  job.blocks = blocks_for(job.groups);
  return true;
}

}  // namespace

Queued queue(const DLTensor& view, std::uint32_t kind, bool fake, const CopyRequest& copy, Slot& slot) {
  if (kind == k::kNone) return Queued::Elsewhere;
  std::uint32_t device = 0;
  DeviceEngine* engine = engine_for(fake, view.device.device_id, device);
  if (engine == nullptr) return Queued::Elsewhere;
  void* stream = nullptr;
  if (!fake && !current_work_stream(engine->backend().dlpack_device_type(), view.device.device_id, stream)) {
    return Queued::Elsewhere;
  }
  if (engine->backend().capturing(stream)) return Queued::Capturing;
  k::TensorJob job;
  if (!describe(view, kind, job)) return Queued::Elsewhere;
  engine->make_room(stream);
  Slot taken;
  if (!engine->take_slot(job, copy, stream, taken)) return Queued::Elsewhere;
  engine->add(job, stream);
  slot = {device, job.slot, taken.ring_ticket, copy.check_only, taken.ring_refused};
  return Queued::Yes;
}

core::DeviceHeldBytes* ring_of(Slot slot) { return engines[slot.device]->ring(slot.check_ring); }

void launch_queued() {
  for (auto& engine : engines) {
    if (engine) engine->launch();
  }
}

bool may_poll() {
  for (std::uint32_t device = 1; device < engines.size(); ++device) {
    void* stream = nullptr;
    if (!engines[device]) continue;
    const int ordinal = static_cast<int>(device) - 1;
    if (!current_work_stream(engines[device]->backend().dlpack_device_type(), ordinal, stream) ||
        engines[device]->backend().capturing(stream)) {
      return false;
    }
  }
  return true;
}

bool ready(Slot slot) { return engines[slot.device]->ready(slot.index); }
void wait(Slot slot) { engines[slot.device]->wait(slot.index); }
std::optional<statistics_kernel::Result> take(Slot slot, const std::function<void(const std::byte*, const statistics_kernel::Result&)>& consume_bytes) {
  return engines[slot.device]->take(slot.index, consume_bytes);
}
void abandon(Slot slot) { engines[slot.device]->abandon(slot.index); }
const Costs& costs() { return engine_costs; }

}  // namespace ophook::py::device_statistics
