#pragma once
#include <atomic>
#include <cstdint>

#include "ophook/thread_clock.hpp"

namespace ophook::py {

/// Per-thread hook state. `depth` counts recorded calls in progress on this thread (nesting);
/// `busy` is set while ophook itself runs Python code (a repr, a torch attribute) so that calls it
/// makes are passed through unrecorded. Only touched with the GIL held.
struct ThreadState {
  int depth = 0;
  bool busy = false;
  std::int32_t tid = 0;  // cached gettid(); reset in a forked child
  core::ThreadClock clock;  // times of this thread's calls
};

ThreadState& thread_state() noexcept;

/// gettid() of the calling thread, cached in `thread`, its state (passed in: every thread-local
/// lookup in the extension is a call to __tls_get_addr).
std::int32_t current_tid(ThreadState& thread) noexcept;

/// Recording switch of the Python API (Tracer, install/uninstall): hooks stay patched but pass
/// calls straight through while off.
extern std::atomic<bool> g_recording_on;

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
