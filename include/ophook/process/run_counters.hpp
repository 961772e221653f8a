#pragma once
#include <atomic>
#include <cstdint>

namespace ophook::core {

/// What a run counts of the calls and tensors it could not record as it meant to, for
/// summary.json's totals: records dropped after the recording finished, records the capturing side
/// still holds (waiting for a device's results), tensors read through torch, tensors not read.
/// Lock-free; reset when a run begins and in a forked child.
class RunCounters {
 public:
  /// Records dropped after finish() (late calls during interpreter shutdown).
  void count_dropped() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  /// Records the capturing side holds back before submitting them — waiting for statistics
  /// computed on a device (docs/devices.md), or collectives whose work has not completed
  /// (docs/ranks.md): finish() counts those still held as dropped.
  void set_held_records(std::uint64_t count) noexcept { held_.store(count, std::memory_order_relaxed); }
  void set_open_collectives(std::uint64_t count) noexcept { open_collectives_.store(count, std::memory_order_relaxed); }
  std::uint64_t take_held_records() noexcept { return held_.exchange(0) + open_collectives_.exchange(0); }

  /// Tensors whose values were read through torch (OPHOOK_TENSOR_COPY): summary.json's
  /// totals.tensors_copied_by_torch.
  void count_tensor_copied_by_torch() noexcept { copied_by_torch_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t tensors_copied_by_torch() const noexcept { return copied_by_torch_.load(std::memory_order_relaxed); }

  /// A tensor that could not be read (docs/devices.md): this run's counts, this one included.
  struct NotReadCounts {
    std::uint64_t all = 0, out_of_memory = 0;
  };
  NotReadCounts count_tensor_not_read(bool out_of_memory) noexcept {
    const auto oom = out_of_memory ? not_read_oom_.fetch_add(1, std::memory_order_relaxed) + 1
                                   : not_read_oom_.load(std::memory_order_relaxed);
    return {not_read_.fetch_add(1, std::memory_order_relaxed) + 1, oom};
  }

  /// A new run, or a forked child's own (the parent's held records stay the parent's).
  void reset() noexcept {
    dropped_.store(0);
    held_.store(0);
    open_collectives_.store(0);
    copied_by_torch_.store(0);
    not_read_.store(0), not_read_oom_.store(0);
  }

 private:
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> open_collectives_{0};
  std::atomic<std::uint64_t> copied_by_torch_{0};
  std::atomic<std::uint64_t> not_read_{0}, not_read_oom_{0};
};

}  // namespace ophook::core
