// SIGTERM/SIGHUP with the default disposition: finish the output, then die of the signal anyway.
#include "termination_signal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace ophook::core {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGHUP};

// Read by the handler, so plain lock-free atomics only. Written before g_owner_pid is published.
std::atomic<int> g_owner_pid{0};        // the process whose watcher thread exists
std::atomic<int> g_wake_write{-1};      // handler → watcher
std::atomic<int> g_done_read{-1};       // watcher → handler
std::atomic<bool> g_handling{false};
int g_fds[4] = {-1, -1, -1, -1};        // wake read/write, done read/write (for closing in a child)
void (*g_finish)() noexcept = nullptr;

void die_of(int sig) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // The signal is blocked while its handler runs: it stays pending and kills the process with its
  // usual status as soon as the handler returns.
  ::raise(sig);
}

void wait_readable(int fd, int timeout_ms) noexcept {
  pollfd p{fd, POLLIN, 0};
  // EINTR (another signal) shortens the wait; that is acceptable, the process is dying anyway.
  (void)::poll(&p, 1, timeout_ms);
}

void on_termination_signal(int sig) {
  const int saved_errno = errno;
  if (g_owner_pid.load() == ::getpid() && !g_handling.exchange(true)) {
    const char byte = 1;
    if (::write(g_wake_write.load(), &byte, 1) == 1) wait_readable(g_done_read.load(), kTerminationWaitMs);
  }
  die_of(sig);
  errno = saved_errno;
}

void watch(int wake_read, int done_write) noexcept {
  char byte = 0;
  ssize_t n;
  while ((n = ::read(wake_read, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) return;
  g_finish();
  (void)!::write(done_write, &byte, 1);
}

bool start_watcher() noexcept {
  int wake[2], done[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) return false;
  if (::pipe2(done, O_CLOEXEC) != 0) {
    ::close(wake[0]), ::close(wake[1]);
    return false;
  }
  // The watcher must never take a signal meant for the program.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  bool started = true;
  try {
    std::thread(watch, wake[0], done[1]).detach();
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!started) {
    for (const int fd : {wake[0], wake[1], done[0], done[1]}) ::close(fd);
    return false;
  }
  g_fds[0] = wake[0], g_fds[1] = wake[1], g_fds[2] = done[0], g_fds[3] = done[1];
  g_wake_write.store(wake[1]);
  g_done_read.store(done[0]);
  return true;
}

}  // namespace

void arm_termination_signals(void (*finish)() noexcept) noexcept {
  const int pid = ::getpid();
  if (g_owner_pid.load() == pid) return;
  // A forked child: the parent's watcher does not exist here, and its pipes are the parent's.
  g_owner_pid.store(0);
  for (int& fd : g_fds) {
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
