// A forked child's fds before it execs node: each source fd at its target number, open
// across the exec, and nothing else of the parent's. Child side, async-signal-safe.
#ifndef ZYGO_AGENTS_NODE_CHILD_FDS_H_
#define ZYGO_AGENTS_NODE_CHILD_FDS_H_

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

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_CHILD_FDS_H_
