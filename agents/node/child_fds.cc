// Moving a child's fds into place without one move undoing another.
#include "agents/node/child_fds.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace zygo::agents::node {
namespace {

// Above any target and any fd an agent has open at the time.
constexpr int kScratchFloor = 100;
constexpr size_t kMaxMoves = 8;

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

}  // namespace zygo::agents::node
