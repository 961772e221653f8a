// SIGTERM/SIGHUP with the default disposition: finish the output, then die of the signal anyway.
#include "process/termination_signal.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "ophook/process/program_pause.hpp"

namespace ophook::core {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kSignals[] = {SIGTERM, SIGHUP};

// Read by the handler, so plain lock-free atomics only. Written before g_owner_pid is published.
std::atomic<int> g_owner_pid{0};    // the process whose watcher thread exists
std::atomic<int> g_wake_write{-1};  // handler → watcher: one byte, the signal's number
std::atomic<bool> g_handling{false};
int g_wake_fds[2] = {-1, -1};  // for closing in a forked child
TerminationFinish g_finish = nullptr;
std::atomic<ProgramPause> g_pause{nullptr};

const char* signal_name(int sig) noexcept {
  return sig == SIGHUP ? "SIGHUP" : "SIGTERM";
}

// Restores the default action and delivers `sig` to this thread, so the process dies of it with
// its usual status. (In the handler the signal is blocked until it returns; on the watcher
// thread always: both are lifted here.)
[[noreturn]] void die_of(int sig) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);  // not reached: the default action of both signals ends the process
}

// Returns at once, without waiting for the output: the interrupted thread may hold a lock that
// finishing needs. A system call it interrupted may fail with EINTR, as with any handled signal
// (Python retries those itself, PEP 475).
void on_termination_signal(int sig) {
  const int saved_errno = errno;
  if (g_owner_pid.load() != ::getpid()) die_of(sig);  // a forked child without a watcher of its own
  if (!g_handling.exchange(true)) {
    const auto byte = static_cast<unsigned char>(sig);
    if (::write(g_wake_write.load(), &byte, 1) != 1) die_of(sig);
  }
  errno = saved_errno;
}

// Runs `g_finish` on a thread of its own and waits for it until `deadline` at most: a writer stuck
// on a hung file system must not keep a terminated process alive.
void finish_until(const char* signal, Clock::time_point files_deadline, Clock::time_point deadline) noexcept {
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  try {
    std::thread([done, signal, files_deadline] {
      g_finish(signal, files_deadline);
      std::lock_guard lock(done->mu);
      done->done = true;
      done->cv.notify_all();
    }).detach();
  } catch (...) {
    return g_finish(signal, files_deadline);
  }
  std::unique_lock lock(done->mu);
  done->cv.wait_until(lock, deadline, [&] { return done->done; });
}

void watch(int wake_read) noexcept {
  unsigned char byte = 0;
  ssize_t n;
  while ((n = ::read(wake_read, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) return;
  const int sig = byte;
  const auto start = Clock::now();
  if (const auto pause = g_pause.load()) pause(kTerminationPauseMs, signal_name(sig));
  finish_until(signal_name(sig), start + milliseconds(kTerminationFilesMs), start + milliseconds(kTerminationWaitMs));
  die_of(sig);
}

bool start_watcher() noexcept {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) return false;
  // The watcher (and the thread it starts to finish) must never take a signal meant for the program.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  bool started = true;
  try {
    std::thread(watch, wake[0]).detach();
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!started) {
    ::close(wake[0]), ::close(wake[1]);
    return false;
  }
  g_wake_fds[0] = wake[0], g_wake_fds[1] = wake[1];
  g_wake_write.store(wake[1]);
  return true;
}

}  // namespace

void set_program_pause(ProgramPause pause) noexcept {
  g_pause.store(pause);
}

void arm_termination_signals(TerminationFinish finish) noexcept {
  const int pid = ::getpid();
  if (g_owner_pid.load() == pid) return;
  // A forked child: the parent's watcher does not exist here, and its pipe is the parent's.
  g_owner_pid.store(0);
  for (int& fd : g_wake_fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  g_handling.store(false);
  g_finish = finish;
  if (!start_watcher()) return;
  g_owner_pid.store(pid);
  for (const int sig : kSignals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    const bool ours = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == on_termination_signal;
    if (ours || (current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction mine {};
    mine.sa_handler = on_termination_signal;
    sigemptyset(&mine.sa_mask);
    for (const int other : kSignals) sigaddset(&mine.sa_mask, other);
    mine.sa_flags = SA_RESTART;
    ::sigaction(sig, &mine, nullptr);
  }
}

}  // namespace ophook::core
