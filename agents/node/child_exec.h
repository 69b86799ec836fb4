// A forked child of the agent becoming node (a worker, or the snapshot builder): each
// source fd at its target number, open across the exec, nothing else of the agent's, death
// with the agent, no signal blocked. Child side, async-signal-safe.
#ifndef ZYGO_AGENTS_NODE_CHILD_EXEC_H_
#define ZYGO_AGENTS_NODE_CHILD_EXEC_H_

#include <sys/types.h>

#include <cstddef>

namespace zygo::agents::node {

struct FdMove {
  int source;
  int target;
};

// Puts moves[i].source at moves[i].target for each i (targets 0..N, each once), then
// closes every fd above the highest target. Sources are copied out of the way first, so a
// source that sits on another move's target, or on its own (where dup2 would leave its
// close-on-exec flag), still arrives. False when a call failed.
bool InstallChildFds(const FdMove* moves, size_t count);

// PR_SET_PDEATHSIG SIGKILL (checked against `parent`, which may have died before it), an
// empty signal mask (the zygote blocks SIGCHLD), InstallChildFds, then execve(argv,
// environ). When the exec fails, "zygo-agent-node: cannot start ARGV0: REASON" goes to the
// child's fd 2; it _exits 127 whatever failed.
[[noreturn]] void ExecChild(pid_t parent, const FdMove* moves, size_t count, char* const argv[]);

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_CHILD_EXEC_H_
