#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include "ophook/capture/thread_clock.hpp"
#include "ophook/model/record.hpp"

namespace ophook::py {

/// The three levels that nest independently (OPHOOK_LEVELS): a call is hidden by an enclosing
/// recorded call of its own group only. NumPy's ufunc, ufunc-method and array-function levels are
/// one group: np.mean's inner add.reduce is nested in it.
enum class LevelGroup : std::uint8_t { Numpy, TorchFunction, TorchDispatch, Compiled, Collective };
inline constexpr std::size_t kLevelGroups = 5;

constexpr LevelGroup group_of(core::Level level) noexcept {
  switch (level) {
    case core::Level::TorchFunction: return LevelGroup::TorchFunction;
    case core::Level::TorchDispatch: return LevelGroup::TorchDispatch;
    case core::Level::Compiled: return LevelGroup::Compiled;
    case core::Level::Collective: return LevelGroup::Collective;
    default: return LevelGroup::Numpy;
  }
}

/// Per-thread hook state. Only touched with the GIL held.
struct ThreadState {
  /// Recorded calls in progress on this thread, per level group (nesting within a level).
  std::array<int, kLevelGroups> depth{};
  /// seq of the innermost recorded call in progress on this thread (any level): the parent.
  std::uint64_t innermost_seq = core::CallRecord::kNoParent;
  /// Imports in progress on this thread (OPHOOK_IMPORTS=0: their calls are set-up, not recorded).
  int importing = 0;
  /// optimizer.step() calls in progress on this thread: their ops have phase "optimizer".
  int in_optimizer = 0;
  /// Compiled kernels running (OPHOOK_COMPILE=record): the torch calls they make are theirs.
  int in_kernel = 0;
  /// Set while ophook itself runs Python code (a repr, a torch attribute): calls it makes pass
  /// through unrecorded.
  bool busy = false;
  std::int32_t tid = 0;  // cached gettid(); reset in a forked child
  core::ThreadClock clock;  // times of this thread's calls

  int& depth_of(LevelGroup group) noexcept { return depth[static_cast<std::size_t>(group)]; }
};

ThreadState& thread_state() noexcept;

/// gettid() of the calling thread, cached in `thread`, its state (passed in: every thread-local
/// lookup in the extension is a call to __tls_get_addr).
std::int32_t current_tid(ThreadState& thread) noexcept;

/// Whether calls are recorded at all now: the Python API's switch (Tracer, install/uninstall)
/// and the selection of steps (OPHOOK_STEPS) and ranks (OPHOOK_RANKS). Hooks stay patched but
/// pass calls straight through while any gate is closed; all are checked with one load.
class RecordingGate {
 public:
  enum Bit : std::uint8_t { kOn = 1, kStepSelected = 2, kRankSelected = 4 };
  static bool open() noexcept { return bits_.load(std::memory_order_relaxed) == kAll; }
  static bool on() noexcept { return bits_.load(std::memory_order_relaxed) & kOn; }
  static void set(Bit bit, bool value) noexcept {
    if (value) {
      bits_.fetch_or(bit, std::memory_order_relaxed);
    } else {
      bits_.fetch_and(static_cast<std::uint8_t>(~bit), std::memory_order_relaxed);
    }
  }

 private:
  static constexpr std::uint8_t kAll = kOn | kStepSelected | kRankSelected;
  static inline std::atomic<std::uint8_t> bits_{kStepSelected | kRankSelected};
};

/// RAII: marks this thread busy while ophook runs Python code of its own.
class BusyScope {
 public:
  BusyScope() : state_(thread_state()), was_(state_.busy) { state_.busy = true; }
  ~BusyScope() { state_.busy = was_; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  ThreadState& state_;
  bool was_;
};

}  // namespace ophook::py
