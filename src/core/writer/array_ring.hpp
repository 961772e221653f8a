#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ophook/model/record.hpp"
#include "writer/array_outcome.hpp"

namespace ophook::core {

/// OPHOOK_RING_BYTES, dump mode's flight recorder: the calls whose arrays would get files are held
/// here — their records with the captured bytes, statistics computed, files named but not written —
/// instead of being written; to make room for a new call the oldest leave first, unwritten, so
/// that the ring never holds more than its bytes. A trigger (first NaN/Inf, uncaught exception, termination signal, ophook.dump_ring())
/// takes them all out to be written. The writer thread decides what happens to the calls taken
/// out; the ring counts it for summary.json. Writer thread only.
class ArrayRing {
 public:
  struct HeldCall {
    RecordPtr record;
    std::vector<ArrayOutcome> outcomes;  // indexed like record->arrays
    std::size_t bytes = 0;               // what the record holds in memory
  };

  /// `cap_bytes` 0: no ring. `nan_hunt_default`: the cap is OPHOOK_NAN's default, not a setting.
  /// `steps` (OPHOOK_RING_STEPS): > 0, a call leaves once it is more than that many steps old.
  ArrayRing(std::uint64_t cap_bytes, bool nan_hunt_default, std::uint64_t steps = 0)
      : cap_(cap_bytes), nan_hunt_default_(nan_hunt_default), steps_(steps) {}

  bool on() const noexcept { return cap_ > 0; }
  bool empty() const noexcept { return held_.empty(); }
  const CallRecord& oldest() const noexcept { return *held_.front().record; }

  /// Takes `call` (left as it was should this throw).
  void hold(HeldCall&& call);
  /// Whether `call` alone takes more than the ring's bytes.
  bool too_large(const HeldCall& call) const noexcept { return call.bytes > cap_; }
  /// Whether `extra` more bytes would take the ring over its bytes (a call to hold, or trace lines
  /// waiting behind the held calls, which count on its account).
  bool over(std::size_t extra) const noexcept { return held_bytes_ + extra > cap_; }
  /// Whether the oldest call is older than the steps the ring keeps, seen from a call of `step`.
  bool before_window(std::uint64_t step) const noexcept {
    return steps_ > 0 && !held_.empty() && held_.front().record->step + steps_ < step;
  }
  /// The held calls older than the steps the ring keeps, seen from the newest call held (a
  /// collective's record, read at its completion, can come after calls of later steps and is
  /// not the oldest then), for a trigger to leave unwritten; counted as evicted.
  std::deque<HeldCall> take_stale();
  /// The oldest call, leaving unwritten.
  HeldCall evict_oldest();
  /// Every held call, oldest first, for a trigger (`why`, after call `seq`, at CLOCK_MONOTONIC
  /// `t_ns`) to write; note_written() then says how many files that made, and how many of their
  /// bytes were fetched from a device (held there, DeviceHeldBytes).
  std::deque<HeldCall> take_for_trigger(std::string why, std::uint64_t seq, std::int64_t t_ns);
  void note_written(std::uint64_t files, std::uint64_t bytes_from_device) noexcept;
  /// Every held call, at the end of a run without a trigger.
  std::deque<HeldCall> take_at_end();

  /// How many triggers wrote the ring so far.
  std::size_t triggers() const noexcept { return dumps_.size(); }
  /// summary.json's "ring" (null without a ring).
  nlohmann::ordered_json to_json() const;

 private:
  std::uint64_t cap_;
  bool nan_hunt_default_;
  std::uint64_t steps_;
  std::deque<HeldCall> held_;
  std::size_t held_bytes_ = 0, peak_bytes_ = 0;
  std::uint64_t evicted_ = 0, not_triggered_ = 0;
  std::uint64_t newest_step_ = 0;  // the largest step of a call held

  bool stale(std::uint64_t step) const noexcept { return steps_ > 0 && step + steps_ < newest_step_; }
  nlohmann::ordered_json dumps_ = nlohmann::ordered_json::array();
};

}  // namespace ophook::core
