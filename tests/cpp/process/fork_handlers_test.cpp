#include "ophook/process/fork_handlers.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace ophook::core {
namespace {

// What the handlers did, in order: each appends one letter (no allocation: fork handlers).
char trail[64];
std::size_t trail_length = 0;
void note(char c) noexcept {
  if (trail_length + 1 < sizeof trail) trail[trail_length++] = c, trail[trail_length] = '\0';
}

TEST(ForkHandlers, PrepareRunsInTheListsOrderAndParentAndChildInReverse) {
  // Two stages far apart, set in the opposite order: the list's order decides, not the setting's.
  // Stages of the extension's, which nothing in this binary sets (the core's own stay as they are).
  set_fork_handler(ForkStage::DeviceEngines,
                   {[]() noexcept { note('b'); }, []() noexcept { note('B'); }, []() noexcept { note('y'); }});
  set_fork_handler(ForkStage::ThreadState,
                   {[]() noexcept { note('a'); }, []() noexcept { note('A'); }, []() noexcept { note('x'); }});
  trail_length = 0;
  trail[0] = '\0';
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    (void)!::write(pipe_fds[1], trail, trail_length);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char seen[64] = {};
  const auto n = ::read(pipe_fds[0], seen, sizeof seen - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(seen), "abyx");  // prepare a, b; then the child's in reverse: y, x
  EXPECT_EQ(std::string(trail), "abBA");  // the parent's in reverse: B, A
  set_fork_handler(ForkStage::DeviceEngines, {});
  set_fork_handler(ForkStage::ThreadState, {});
}

}  // namespace
}  // namespace ophook::core
