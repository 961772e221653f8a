#include "thread_state.hpp"

#include "ophook/process/fork_handlers.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace ophook::py {
namespace {
thread_local ThreadState state;

// After fork() the child's only thread has a new tid; the cached one belongs to the parent.
const bool reset_registered = [] {
  core::set_fork_handler(core::ForkStage::ThreadState, {nullptr, nullptr, []() noexcept { state.tid = 0; }});
  return true;
}();
}  // namespace

ThreadState& thread_state() noexcept { return state; }

std::int32_t current_tid(ThreadState& thread) noexcept {
  if (thread.tid == 0) thread.tid = static_cast<std::int32_t>(::syscall(SYS_gettid));
  return thread.tid;
}

}  // namespace ophook::py
