#pragma once
#include <cstdint>

#include "ophook/export.hpp"

/// Every fork() handler of ophook, in one list whose order is stated here rather than left to the
/// order in which static initialisers and first uses happened to register them. Around fork():
/// `prepare` runs in ForkStage order (each takes the locks its state needs, so the child never
/// inherits one held by another thread), then `parent` and `child` in the reverse order (each
/// releases, or in the child resets, what it took, the innermost first). One pthread_atfork()
/// registration runs the whole list. Thread-safe: a stage is set once, before or while others run.
namespace ophook::core {

enum class ForkStage : std::uint8_t {
  Recorder,       // the recorder's tables and writer: the child starts a writer of its own
  StatsBatch,     // the in-place statistics' helper thread: the child starts one of its own
  StatsMemo,      // remembered statistics (capture/stats_memo): its lock
  CopyMemo,       // remembered copies (capture/copy_memo): its lock, then (child) its copies forgotten
  ThreadState,    // the extension's cached thread id: the child's thread has another
  TorchThreads,   // torch's intra-op threads noted as torch's own: the child has none
  HeldReadbacks,  // records a device path holds: the parent's, leaked in the child
  OpenCollectives,  // collectives in flight: the parent's works, leaked in the child
  DeviceEngines,  // the device engines: the child cannot use the parent's CUDA contexts
  Count,
};

struct ForkHandler {
  void (*prepare)() noexcept = nullptr;
  void (*parent)() noexcept = nullptr;
  void (*child)() noexcept = nullptr;
};

/// Sets `stage`'s handlers (null members: nothing at that moment). Registers the list with
/// pthread_atfork() on first use.
OPHOOK_API void set_fork_handler(ForkStage stage, ForkHandler handler) noexcept;

}  // namespace ophook::core
