#include "program_pause.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "ophook/process/program_pause.hpp"
#include "ophook/process/recorder.hpp"
#include "python_common.hpp"
#include "thread_state.hpp"
#include "trigger_listener.hpp"

namespace ophook::py {
namespace {

std::mutex g_mu;
std::condition_variable g_stopped_cv;
bool g_stopped = false;

// A pending call: the interpreter runs it on the main thread between two bytecodes. The other ranks
// of a job are told first (their rings are written too), then records held back (device
// statistics, collectives in flight) are submitted, unless ophook's own code is the one
// interrupted (then they are counted as dropped).
const char* g_signal = "a termination signal";

int stop_here(void*) {
  if (!thread_state().busy) {
    tell_trigger_listener(std::string("termination signal ") + g_signal);
    core::Recorder::run_exit_hooks();
  }
  {
    std::lock_guard lock(g_mu);
    g_stopped = true;
  }
  g_stopped_cv.notify_all();
  for (;;) ::pause();  // the watcher ends the process once the output is written
}

bool stop_program(int timeout_ms, const char* signal) noexcept {
  // During finalisation no bytecode may run again, and the recorder finishes at exit anyway.
  if (!interpreter_running()) return false;
  g_signal = signal;
  if (Py_AddPendingCall(&stop_here, nullptr) != 0) return false;
  std::unique_lock lock(g_mu);
  return g_stopped_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [] { return g_stopped; });
}

}  // namespace

bool interpreter_running() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  return Py_IsInitialized() && !finalizing;
}

void install_program_pause() noexcept {
  core::set_program_pause(&stop_program);
}

}  // namespace ophook::py
