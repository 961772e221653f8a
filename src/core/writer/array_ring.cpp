#include "writer/array_ring.hpp"

#include <algorithm>
#include <utility>

namespace ophook::core {

void ArrayRing::hold(HeldCall&& call) {
  newest_step_ = std::max(newest_step_, call.record->step);
  held_.push_back(std::move(call));
  held_bytes_ += held_.back().bytes;
  peak_bytes_ = std::max(peak_bytes_, held_bytes_);
}

std::deque<ArrayRing::HeldCall> ArrayRing::take_stale() {
  std::deque<HeldCall> stale_calls, kept;
  for (auto& call : held_) {
    auto& into = stale(call.record->step) ? stale_calls : kept;
    into.push_back(std::move(call));
  }
  held_.swap(kept);
  for (const auto& call : stale_calls) held_bytes_ -= call.bytes;
  evicted_ += stale_calls.size();
  return stale_calls;
}

ArrayRing::HeldCall ArrayRing::evict_oldest() {
  auto call = std::move(held_.front());
  held_.pop_front();
  held_bytes_ -= call.bytes;
  ++evicted_;
  return call;
}

std::deque<ArrayRing::HeldCall> ArrayRing::take_for_trigger(std::string why, std::uint64_t seq, std::int64_t t_ns) {
  auto calls = std::exchange(held_, {});
  held_bytes_ = 0;
  nlohmann::ordered_json dump = {{"why", std::move(why)}, {"after_seq", seq}, {"t_ns", t_ns}, {"calls", calls.size()}};
  if (!calls.empty()) {
    dump["first_seq"] = calls.front().record->seq;
    dump["last_seq"] = calls.back().record->seq;
  }
  dump["files"] = 0;
  dumps_.push_back(std::move(dump));
  return calls;
}

void ArrayRing::note_written(std::uint64_t files, std::uint64_t bytes_from_device) noexcept {
  dumps_.back()["files"] = files;
  if (bytes_from_device > 0) dumps_.back()["bytes_from_device"] = bytes_from_device;
}

std::deque<ArrayRing::HeldCall> ArrayRing::take_at_end() {
  auto calls = std::exchange(held_, {});
  held_bytes_ = 0;
  not_triggered_ += calls.size();
  return calls;
}

nlohmann::ordered_json ArrayRing::to_json() const {
  if (!on()) return nullptr;
  return {{"bytes", cap_},
          {"nan_hunt_default", nan_hunt_default_},
          {"steps", steps_ > 0 ? nlohmann::ordered_json(steps_) : nlohmann::ordered_json()},
          {"peak_bytes", peak_bytes_},
          {"calls_evicted", evicted_},
          {"calls_held_at_end", not_triggered_},
          {"triggers", dumps_}};
}

}  // namespace ophook::core
