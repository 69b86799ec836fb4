// Moving a child's fds into place without one move undoing another, then its exec.
#include "agents/node/child_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char** environ;

namespace zygo::agents::node {
namespace {

// Above any target and any fd an agent has open at the time.
constexpr int kScratchFloor = 100;
constexpr size_t kMaxMoves = 8;

void WriteError(const char* text) { (void)!::write(2, text, ::strlen(text)); }

}  // namespace

bool InstallChildFds(const FdMove* moves, size_t count) {
  if (count > kMaxMoves) return false;
  int scratch[kMaxMoves];
  int highest = 0;
  for (size_t i = 0; i < count; ++i) {
    scratch[i] = ::fcntl(moves[i].source, F_DUPFD_CLOEXEC, kScratchFloor);
    if (scratch[i] < 0) return false;
    if (moves[i].target > highest) highest = moves[i].target;
  }
  for (size_t i = 0; i < count; ++i) {
    // From a distinct fd, so dup2 clears close-on-exec on the target.
    if (::dup2(scratch[i], moves[i].target) < 0) return false;
  }
  return ::syscall(SYS_close_range, highest + 1, ~0U, 0) == 0;
}

void ExecChild(pid_t parent, const FdMove* moves, size_t count, char* const argv[]) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!InstallChildFds(moves, count)) ::_exit(127);
  ::execve(argv[0], argv, environ);
  const char* reason = ::strerror(errno);
  WriteError("zygo-agent-node: cannot start ");
  WriteError(argv[0]);
  WriteError(": ");
  WriteError(reason);
  WriteError("\n");
  ::_exit(127);
}

}  // namespace zygo::agents::node
