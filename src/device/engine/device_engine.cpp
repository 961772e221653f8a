#include "device/engine/device_engine.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ophook/log.hpp"

namespace ophook::device {
namespace {

// Threads per block times the groups each thread takes before a tensor gets another block: small
// tensors get one block, large ones up to kMaxBlocksPerJob.
constexpr std::uint64_t kGroupsPerBlock = std::uint64_t{k::kThreads} * 4;

}  // namespace

std::uint32_t blocks_for(std::uint64_t units) {
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>((units + kGroupsPerBlock - 1) / kGroupsPerBlock, 1, k::kMaxBlocksPerJob));
}

Costs engine_costs;

void DeviceEngine::make_room(void* stream) {
  if (params_.jobs > 0 && (stream != stream_ || params_.jobs == k::kJobsPerLaunch)) launch();
}

const std::shared_ptr<StagingMemory>& DeviceEngine::staging() {
  if (!staging_tried_) {
    staging_tried_ = true;
    std::uint64_t device_address = 0;
    if (const std::byte* host = backend_->staging(staging_bytes_, device_address)) {
      staging_ = std::make_shared<StagingMemory>(host, device_address, staging_bytes_);
    }
  }
  return staging_;
}

bool DeviceEngine::take_slot(k::TensorJob& job, const CopyRequest& copy, void* stream, Slot& slot, Queued& refused) {
  refused = Queued::Elsewhere;
  if (free_.empty()) sweep_abandoned();
  if (free_.empty()) return false;
  job.flags |= copy.judged;
  const std::uint64_t bytes = copy.to == CopyRequest::To::Nowhere ? 0 : job.count * k::item_size(job.kind);
  std::uint32_t shares = kNone;
  if (copy.to == CopyRequest::To::Ring && bytes > 0) {
    if (DeviceRing* ring = ring_for(copy.ring_bytes, copy.check_only);
        ring != nullptr && (shares = ring_read_to_share(job, copy, stream)) != kNone) {
      slot.ring_ticket = slots_[shares].ring_ticket;
      ++slots_[shares].followers;
      ++engine_costs.ring_copies_shared;
    } else if (ring != nullptr) {
      ring->forget_overwritten();
      const auto place = ring->take(bytes, job.count, copy.widen, next_launch_,
                                    [&](std::uint64_t launch) { return may_overwrite(launch, stream); });
      if (place) {
        job.copy_to = place->device_address, slot.ring_ticket = place->ticket;
        job.flags |= k::kRingCopy;
      } else {
        slot.ring_refused = true;
      }
    }
  }
  StagingMemory::Range staged;
  if (bytes > 0 && slot.ring_ticket == 0 && !slot.ring_refused) {
    if (!staging() || bytes > staging_->size() / 2) return false;
    staged = staging_->take(bytes);
    if (!staged.copy) {
      sweep_abandoned();  // abandoned copies may hold the staging memory
      staged = staging_->take(bytes);
    }
    if (!staged.copy) {
      refused = Queued::StagingFull;
      return false;
    }
    job.copy_to = staged.device_address;
  }
  job.slot = free_.back();
  free_.pop_back();
  if (staged.copy && copy.compare && (job.flags & k::kContiguous)) compare_with_earlier(job, copy, stream, bytes);
  auto& taken = slots_[job.slot];
  const std::uint64_t staged_bytes = staged.copy ? bytes : 0;
  taken = {SlotState::Used, next_launch_, std::move(staged.copy), staged_bytes,
           (job.flags & k::kCopyIfChanged) ? job : k::TensorJob{}, job.data, stream};
  taken.to = copy.to, taken.check_ring = copy.check_only;
  taken.ring_ticket = slot.ring_ticket, taken.ring_refused = slot.ring_refused, taken.ring_follows = shares;
  taken.kind = job.kind, taken.count = job.count;
  if ((job.flags & k::kRingCopy) && (job.flags & k::kContiguous)) latest_at_[job.data] = job.slot;
  return true;
}

std::uint32_t DeviceEngine::ring_read_to_share(const k::TensorJob& job, const CopyRequest& copy, void* stream) const {
  if (!copy.may_share || !(job.flags & k::kContiguous)) return kNone;
  const auto at = latest_at_.find(job.data);
  if (at == latest_at_.end()) return kNone;
  const auto& earlier = slots_[at->second];
  const bool shares = earlier.state == SlotState::Used && earlier.to == CopyRequest::To::Ring &&
                      earlier.ring_ticket != 0 && earlier.ring_follows == kNone && earlier.check_ring == copy.check_only &&
                      earlier.stream == stream && earlier.launch + 1 == next_launch_ && earlier.kind == job.kind &&
                      earlier.count == job.count;
  return shares ? at->second : kNone;
}

bool DeviceEngine::holds_its_ring_bytes(std::uint32_t index) {
  const auto& slot = slots_[index];
  if (slot.ring_follows == kNone || slot.launch_failed) return true;  // a failed launch has no result at all
  const auto* results = backend_->results();
  const bool alike = !slots_[slot.ring_follows].launch_failed && k::same_fingerprint(results[index], results[slot.ring_follows]);
  if (!alike) ++engine_costs.ring_shares_changed;
  return alike;
}

bool DeviceEngine::share(const k::TensorJob& job, const CopyRequest& copy, Slot& slot) {
  if (copy.to == CopyRequest::To::Host) return false;
  for (std::uint32_t j = 0; j < params_.jobs; ++j) {
    const auto& other = params_.job[j];
    auto& entry = slots_[other.slot];
    if (entry.state != SlotState::Used || other.data != job.data || other.kind != job.kind ||
        other.count != job.count || entry.to != copy.to || entry.check_ring != copy.check_only) {
      continue;
    }
    // In C order both: the same bytes in the same order, whatever the shape (a view's reshaping).
    // Else the same walk: the same dimensions, and where walked in memory order (a transpose of
    // a contiguous tensor lists its input's), the same C order too.
    bool same = (other.flags & k::kContiguous) && (job.flags & k::kContiguous);
    const bool walked = (job.flags & k::kMemoryOrder) != 0;
    if (!same && other.ndim == job.ndim && walked == ((other.flags & k::kMemoryOrder) != 0)) {
      same = true;
      for (std::uint32_t d = 0; d < job.ndim && same; ++d) {
        same = other.sizes[d] == job.sizes[d] && (other.sizes[d] == 1 || other.strides[d] == job.strides[d]) &&
               (!walked || other.c_strides[d] == job.c_strides[d]);
      }
    }
    if (!same) continue;
    ++entry.readers;
    ++engine_costs.reads_shared;
    slot.index = other.slot, slot.ring_ticket = entry.ring_ticket, slot.ring_refused = entry.ring_refused;
    return true;
  }
  return false;
}

void DeviceEngine::compare_with_earlier(k::TensorJob& job, const CopyRequest& copy, void* stream, std::uint64_t bytes) {
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

bool DeviceEngine::may_follow(std::uint32_t earlier, const k::TensorJob& job, void* stream, std::uint64_t bytes) const {
  const auto& slot = slots_[earlier];
  if (slot.state != SlotState::Used || slot.stream != stream || slot.staged_bytes != bytes) return false;
  const auto& then = slot.copy_if_changed;
  if (!(then.flags & k::kCopyIfChanged)) return true;
  return (job.flags & k::kCopyIfChanged) && then.held_position == job.held_position &&
         then.held_by_value == job.held_by_value;
}

void DeviceEngine::add(k::TensorJob job, void* stream) {
  stream_ = stream;
  job.first_block = blocks_;
  params_.job[params_.jobs++] = job;
  blocks_ += job.blocks;
  if (job.flags & (k::kJudgedInput | k::kJudgedOutput)) ++params_.judged_jobs;
  if (job.flags & k::kCopyIfChanged) {
    job.first_block = copy_blocks_;
    job.blocks = blocks_for(job.count * k::item_size(job.kind) / 16);
    copies_.job[copies_.jobs++] = job;
    copy_blocks_ += job.blocks;
  }
}

void DeviceEngine::withdraw_ring_copy(std::uint32_t index) {
  auto& slot = slots_[index];
  if (slot.ring_ticket == 0 || slot.launch != next_launch_ || slot.readers > 1) return;
  for (std::uint32_t j = 0; j < params_.jobs; ++j) {
    auto& job = params_.job[j];
    if (job.slot != index || !(job.flags & k::kRingCopy)) continue;
    job.flags &= ~k::kRingCopy;
    job.copy_to = 0;
    if (const auto at = latest_at_.find(job.data); at != latest_at_.end() && at->second == index) latest_at_.erase(at);
    rings_[slot.check_ring ? 1 : 0]->withdraw(slot.ring_ticket);
    ++engine_costs.ring_copies_withdrawn;
  }
}

void DeviceEngine::launch() {
  if (params_.jobs == 0) return;
  Launch entry;
  entry.stream = stream_;
  entry.open_slots = entry.jobs = params_.jobs;
  entry.stamp = params_.stamp = next_launch_ + 1;
  params_.open_through = first_launch_;  // the stamps of the launches whose calls are all judged
  // A launch of judged inputs alone read a call's inputs before it ran (it may write into them):
  // the launch right after it on its stream, of the call's outputs, takes their verdict too.
  bool judged_outputs = false;
  for (std::uint32_t j = 0; j < params_.jobs; ++j) judged_outputs |= (params_.job[j].flags & k::kJudgedOutput) != 0;
  params_.prior_inputs = judged_outputs && inputs_launch_stream_ == stream_ ? inputs_launch_ : 0;
  inputs_launch_ = params_.judged_jobs > 0 && !judged_outputs ? entry.stamp : 0;
  inputs_launch_stream_ = stream_;
  entry.stamped = copies_.jobs == 0;
  for (std::uint32_t j = 0; j < params_.jobs; ++j) {
    entry.slots[j] = params_.job[j].slot;
    if (slots_[params_.job[j].slot].staged) entry.stamped = false;
  }
  reserve_arena(entry);
  if (!launches_.empty() && launches_.back().stream != entry.stream) last_stream_switch_ = next_launch_;
  for (std::uint32_t j = 0; j < params_.jobs; ++j) params_.job[j].partials = entry.arena_begin + params_.job[j].first_block;
  std::string why;
  bool failed = !backend_->launch(Backend::Kernel::Statistics, params_, blocks_, stream_, why) ||
                (copies_.jobs > 0 && !backend_->launch(Backend::Kernel::CopyChanged, copies_, copy_blocks_, stream_, why));
  if (!failed && !entry.stamped) {
    entry.event = backend_->record(stream_);
    if (entry.event == nullptr) failed = true, why = "no event could be recorded";
  }
  launches_.push_back(entry);
  if (failed) {
    fail(launches_.back(), why);
  } else {
    engine_costs.kernels_launched += copies_.jobs > 0 ? 2 : 1;
    engine_costs.tensors_read += params_.jobs;
    for (std::uint32_t j = 0; j < params_.jobs; ++j) {
      const auto bytes = params_.job[j].count * k::item_size(params_.job[j].kind);
      engine_costs.bytes_read += bytes;
      if (params_.job[j].flags & k::kRingCopy) engine_costs.ring_bytes_copied += bytes;
    }
  }
  ++next_launch_;
  params_.jobs = copies_.jobs = params_.judged_jobs = 0;
  blocks_ = copy_blocks_ = 0;
  if (!abandoned_.empty()) sweep_abandoned();
  engine_costs.launches_held_most = std::max<std::uint64_t>(engine_costs.launches_held_most, launches_.size());
}

bool DeviceEngine::answers_unasked(std::uint32_t index) const {
  const auto launch = slots_[index].launch;
  if (launch == next_launch_) return true;  // not launched yet: not ready
  const Launch& entry = launches_[launch - first_launch_];
  return entry.stamped || entry.done;
}

bool DeviceEngine::ready(std::uint32_t index) {
  if (slots_[index].launch == next_launch_) return false;  // not launched yet
  Launch& entry = launch_of(index);
  if (entry.done) return true;
  return entry.stamped ? landed(entry, index) : finished(entry);
}

void DeviceEngine::wait(std::uint32_t index) {
  if (slots_[index].launch == next_launch_) launch();
  Launch& entry = launch_of(index);
  if (!entry.done) wait_for(entry);
}

std::optional<k::Result> DeviceEngine::take(std::uint32_t index, const ConsumeBytes& consume_bytes) {
  Launch& entry = launch_of(index);
  settle_ring_copy(index);  // before any of its records can reach a trigger
  std::optional<k::Result> result;
  if (slots_[index].readers > 1) {  // another read it answers is still to come
    --slots_[index].readers;
    if (!entry.failed) result = backend_->results()[index];
    return result;
  }
  if (!entry.failed) {
    result = backend_->results()[index];
    engine_costs.bytes_to_host += sizeof(k::Result);
    const auto& slot = slots_[index];
    const std::uint32_t holder = slot.staged && consume_bytes ? bytes_holder(index) : index;
    if (holder == kLost) {
      result.reset();  // compared with an earlier read whose launch failed: its bytes never came
    } else if (slot.staged && consume_bytes) {
      consume_bytes(holder == kHeldByHost ? nullptr : slots_[holder].staged, *result);
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

void DeviceEngine::abandon(std::uint32_t index) {
  if (slots_[index].readers > 1) {
    --slots_[index].readers;
    return;
  }
  if (slots_[index].state == SlotState::Abandoned) return;
  slots_[index].state = SlotState::Abandoned;
  abandoned_.push_back(index);
}

DeviceRing* DeviceEngine::ring_for(std::uint64_t bytes, bool check_part) {
  if (!ring_tried_) {
    ring_tried_ = true;
    const std::uint64_t check_bytes = bytes / kCheckRingShare;
    std::string why;
    const std::uint64_t address = backend_->ring_memory(bytes + check_bytes, why);
    if (address == 0) {
      core::log_warn("the OPHOOK_RING_BYTES ring keeps tensors' bytes on the host, not on their device: {}", why);
    } else {
      // Kept for the process's life, past the engine's: the writer may fetch from them until the end.
      static auto& kept = *new std::vector<std::unique_ptr<DeviceRing>>;
      rings_[0] = kept.emplace_back(std::make_unique<DeviceRing>(*backend_, address, bytes)).get();
      rings_[1] = kept.emplace_back(std::make_unique<DeviceRing>(*backend_, address + bytes, check_bytes)).get();
      engine_costs.ring_bytes += bytes + check_bytes;
    }
  }
  return ring(check_part);
}

DeviceRing::Overwrite DeviceEngine::may_overwrite(std::uint64_t launch, void* stream) {
  using Overwrite = DeviceRing::Overwrite;
  if (launch >= next_launch_) return Overwrite::Never;
  if (launch < first_launch_) return Overwrite::Yes;  // finished, its results all taken
  Launch& entry = launches_[launch - first_launch_];
  // Still copying on another stream, it could write over the new bytes: it finishes first.
  if (entry.stream != stream && !finished(entry)) wait_for(entry);
  return Overwrite::Yes;
}

void DeviceEngine::settle_ring_copy(std::uint32_t index) {
  const auto& slot = slots_[index];
  if (slot.ring_ticket == 0 || slot.ring_follows != kNone) return;  // a shared room is settled by its own read
  const auto copied = slot.launch_failed ? k::kCopiedPart : static_cast<k::RingCopy>(backend_->ring_copies()[index]);
  if (rings_[slot.check_ring ? 1 : 0]->settle(slot.ring_ticket, copied) && copied != k::kCopiedAll) {
    ++engine_costs.ring_copies_skipped;
  }
}

void DeviceEngine::settle_ring() {
  if (rings_[0] == nullptr) return;
  launch();
  for (std::size_t i = 0; i < launches_.size(); ++i) {
    Launch& entry = launches_[i];
    for (std::uint32_t j = 0; j < entry.jobs; ++j) {
      const std::uint32_t index = entry.slots[j];
      const auto& slot = slots_[index];
      if (slot.ring_ticket == 0 || slot.launch != first_launch_ + i ||
          (slot.state != SlotState::Used && slot.state != SlotState::Abandoned)) {
        continue;
      }
      if (!finished(entry)) wait_for(entry);
      settle_ring_copy(index);
    }
  }
}

bool DeviceEngine::landed(Launch& entry, std::uint32_t index) {
  std::uint32_t job = 0;
  for (std::uint32_t j = 0; j < entry.jobs && job == 0; ++j) {
    if (entry.slots[j] == index) job = 1u << j;
  }
  if (!(entry.landed & job) && backend_->arrived(index, entry.stamp)) entry.landed |= job;
  if (entry.landed == (1u << entry.jobs) - 1 && !entry.done) finish(entry);
  return (entry.landed & job) != 0;
}

bool DeviceEngine::finished(Launch& entry) {
  if (entry.done) return true;
  if (entry.stamped) {
    for (std::uint32_t j = 0; j < entry.jobs && !entry.done; ++j) {
      if (!(entry.landed & (1u << j)) && !landed(entry, entry.slots[j])) return false;
    }
  } else if (backend_->finished(entry.event)) {
    finish(entry);
  }
  return entry.done;
}

void DeviceEngine::finish(Launch& entry) {
  entry.done = true;
  if (entry.event != nullptr) backend_->recycle(entry.event);
  entry.event = nullptr;
}

void DeviceEngine::fail(Launch& entry, const std::string& why) {
  finish(entry);
  entry.failed = true;
  for (std::uint32_t j = 0; j < entry.jobs; ++j) slots_[entry.slots[j]].launch_failed = true;
  if (engine_costs.launch_failures++ == 0) {
    core::log_warn("the statistics kernel could not run ({}): those tensors are recorded without values", why);
  }
}

void DeviceEngine::wait_for(Launch& entry) {
  const auto start = std::chrono::steady_clock::now();
  if (!entry.stamped) {
    backend_->wait(entry.event);
    finish(entry);
  } else if (!backend_->wait_until([&] { return finished(entry); }, entry.stream)) {
    fail(entry, "it failed on the device, or its results never came");
  }
  ++engine_costs.synchronizations;
  engine_costs.wait_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

std::uint32_t DeviceEngine::bytes_holder(std::uint32_t index) const {
  const auto* results = backend_->results();
  const auto& job = slots_[index].copy_if_changed;
  if (!(job.flags & k::kCopyIfChanged) || !k::unchanged(job, results)) return index;
  if (!(job.flags & k::kHeldInSlot)) return kHeldByHost;
  const std::uint32_t earlier = job.held_slot;
  if (slots_[earlier].launch_failed) return kLost;
  const auto& then = slots_[earlier].copy_if_changed;
  return (then.flags & k::kCopyIfChanged) && k::unchanged(then, results) ? kHeldByHost : earlier;
}

void DeviceEngine::release(std::uint32_t index) {
  settle_ring_copy(index);  // an abandoned slot's (its result is in)
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

void DeviceEngine::free_when_unfollowed(std::uint32_t index) {
  auto& slot = slots_[index];
  if (slot.state != SlotState::Released || slot.followers > 0) return;
  const std::uint32_t earlier =
      (slot.copy_if_changed.flags & k::kHeldInSlot) != 0 ? slot.copy_if_changed.held_slot : slot.ring_follows;
  slot = SlotEntry{};
  free_.push_back(index);
  if (earlier != kNone && --slots_[earlier].followers == 0) free_when_unfollowed(earlier);
}

void DeviceEngine::sweep_abandoned() {
  std::erase_if(abandoned_, [&](std::uint32_t i) {
    if (slots_[i].launch == next_launch_ || !ready(i)) return false;
    release(i);
    return true;
  });
}

void DeviceEngine::reserve_arena(Launch& entry) {
  if (cursor_ + blocks_ > kArenaPartials) cursor_ = 0;
  entry.arena_begin = cursor_;
  entry.arena_end = cursor_ + blocks_;
  cursor_ = entry.arena_end;
  // All in flight on the launch's own stream (no switch since the oldest): none to wait for, and
  // none to look through (a GPU far behind keeps a thousand launches in flight).
  if (launches_.empty() || (last_stream_switch_ <= first_launch_ && launches_.back().stream == entry.stream)) return;
  for (auto& running : launches_) {
    const bool overlaps = running.arena_begin < entry.arena_end && entry.arena_begin < running.arena_end;
    if (!overlaps || running.stream == entry.stream) continue;
    if (!finished(running)) wait_for(running);
  }
}

}  // namespace ophook::device
