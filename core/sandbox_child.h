// The sandbox's first process (pid 1 of its pid namespace), from clone until it becomes
// zygo-init. It is a copy of the process that cloned it (zygo, or the supervisor with
// every function's data), so nothing of the sandbox may run while it is: it builds the
// sandbox around itself, locks itself down, then execs zygo-init (core/init/), which
// starts the command. Child side only: no allocation, no locks.
#ifndef ZYGO_CORE_SANDBOX_CHILD_H_
#define ZYGO_CORE_SANDBOX_CHILD_H_

#include "core/plan.h"

namespace zygo::core {

struct SandboxChildArgs {
  const Plan* plan;
  int go_fd;      // read end: one byte once the parent wrote id maps and the cgroup
  int report_fd;  // write end for ChildRecords (CLOEXEC)
  // v1: the `tasks` files of the sandbox's cgroups, -1-terminated (empty on v2 or
  // without a cgroup). The child writes itself in, then joins a cgroup namespace.
  const int* cgroup_tasks_fds;
  bool own_network;  // a new network namespace: bring its lo up
  const char* hostname;
  const char* workdir;
  int init_fd;             // zygo-init's exec-only memfd (core/init_binary.h)
  char* const* init_argv;  // NULL-terminated, as core/init/init_layout.h lays it out
  char* const* envp;       // NULL-terminated: the command's environment
  const int* close_fds;    // the parent's fds to close first, -1-terminated
  // Fds the command gets as 3, 4, ... (at most init::kMaxInheritedFds), -1-terminated.
  const int* inherit_fds;
  const int* stdio_fds;  // three fds for the command's 0, 1, 2; -1 keeps this process's
  bool explain_denials;  // every refused syscall goes to zygo-init to be counted
};

[[noreturn]] void RunSandboxChild(const SandboxChildArgs& args);

// The signals the init forwards to the command. The parent blocks them before
// clone so none is lost between clone and zygo-init's wait loop.
void ForwardedSignals(sigset_t* set);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SANDBOX_CHILD_H_
