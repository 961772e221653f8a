#pragma once
#include <string>
#include <vector>

namespace ophook::cli {

/// Runs `argv` (argv[0] searched in PATH, like a shell) as a child with this process's
/// environment and waits for it. While it runs, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
/// SIGUSR2 sent to this process are passed on to the child; signals the terminal sends to the
/// whole foreground process group already reach the child and are not sent twice.
/// Returns the child's exit status, 128 + N when signal N killed it, 127 (command not found) or
/// 126 (not executable) after printing a message naming the command on stderr.
/// Installs signal handlers for the duration of the call: not thread-safe, one call at a time.
int run_and_wait(const std::vector<std::string>& argv);

}  // namespace ophook::cli
