#include "launch/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "exit_codes.hpp"
#include "ophook/error.hpp"

namespace ophook::cli {

namespace {

constexpr std::array<int, 6> kForwarded = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child_pid = 0;

void forward_signal(int sig, siginfo_t* info, void* /*context*/) {
  // SI_KERNEL: the terminal signalled the whole foreground process group, the child included.
  if (info != nullptr && info->si_code == SI_KERNEL) {
    return;
  }
  const pid_t child = g_child_pid;
  if (child > 0) {
    kill(child, sig);
  }
}

/// Blocks the forwarded signals for its lifetime, so none arrives between fork and the moment
/// the parent knows the child's pid.
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kForwarded) sigaddset(&set, sig);
    sigprocmask(SIG_BLOCK, &set, &saved_);
  }
  ~SignalBlock() { restore(); }
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;
  void restore() { sigprocmask(SIG_SETMASK, &saved_, nullptr); }

 private:
  sigset_t saved_;
};

/// Installs forward_signal for the forwarded signals; the destructor puts the old actions back.
class ForwardingHandlers {
 public:
  ForwardingHandlers() {
    struct sigaction action {};
    action.sa_sigaction = forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < kForwarded.size(); ++i) {
      sigaction(kForwarded[i], &action, &saved_[i]);
    }
  }
  ~ForwardingHandlers() {
    for (std::size_t i = 0; i < kForwarded.size(); ++i) {
      sigaction(kForwarded[i], &saved_[i], nullptr);
    }
    g_child_pid = 0;
  }
  ForwardingHandlers(const ForwardingHandlers&) = delete;
  ForwardingHandlers& operator=(const ForwardingHandlers&) = delete;

 private:
  std::array<struct sigaction, kForwarded.size()> saved_{};
};

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw Error(std::string("waitpid failed: ") + std::strerror(errno));
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
  return kExitSignalBase;
}

/// The errno the child sent through the close-on-exec pipe when execvp failed; 0 when the pipe
/// closed without data, i.e. the exec succeeded.
int read_exec_errno(int fd) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(fd, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof child_errno) ? child_errno : 0;
}

}  // namespace

int run_and_wait(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    throw Error("no command given");
  }
  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  SignalBlock block;
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw Error(std::string("cannot fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(pipe_fds[0]);
    block.restore();
    execvp(c_argv[0], c_argv.data());
    const int err = errno;
    (void)!write(pipe_fds[1], &err, sizeof err);
    _exit(kExitNotFound);
  }
  close(pipe_fds[1]);
  g_child_pid = pid;
  ForwardingHandlers handlers;
  block.restore();

  const int exec_errno = read_exec_errno(pipe_fds[0]);
  close(pipe_fds[0]);
  const int status = wait_for(pid);
  if (exec_errno == 0) {
    return status;
  }
  if (exec_errno == ENOENT || exec_errno == ENOTDIR) {
    std::cerr << "ophook run: " << argv[0] << ": command not found\n";
    return kExitNotFound;
  }
  std::cerr << "ophook run: cannot execute " << argv[0] << ": " << std::strerror(exec_errno)
            << '\n';
  return kExitNotExecutable;
}

}  // namespace ophook::cli
