#include "core/sandbox_child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "core/base/child_report.h"
#include "core/base/sys/netdevice.h"
#include "core/base/sys/process.h"
#include "core/identity.h"
#include "core/landlock.h"
#include "core/mounts.h"
#include "core/rlimits.h"
#include "core/seccomp_policy.h"

namespace zygo::core {
namespace {

using base::ChildRecordKind;

[[noreturn]] void Fail(const SandboxChildArgs& args, const ChildFailure& failure) {
  base::FailChildStep(args.report_fd, static_cast<int>(failure.step), failure.err, failure.detail);
}

void FailIf(const SandboxChildArgs& args, const ChildFailure& failure) {
  if (!failure.ok()) Fail(args, failure);
}

void FailIfErrno(const SandboxChildArgs& args, LaunchStep step, bool failed) {
  if (failed) Fail(args, {step, errno});
}

// cgroup v1 cannot clone into a cgroup, and a parent writing our pid into
// cgroup.procs takes the global cgroup_threadgroup_rwsem for writing, which waits for
// an RCU grace period (~15 ms on these VMs). A single-threaded task moving itself
// by writing "0" to `tasks` skips that lock (kernel/cgroup/cgroup.c,
// cgroup_procs_write_start). The fds were opened by the parent, whose credentials
// the kernel checks.
void JoinCgroupsV1(const SandboxChildArgs& args) {
  for (const int* fd = args.cgroup_tasks_fds; *fd >= 0; ++fd) {
    ssize_t n;
    do {
      n = write(*fd, "0", 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) Fail(args, {LaunchStep::kCgroupAttach, errno});
    close(*fd);
  }
}

// Everything between clone and the fork of the command, in the order that works:
// mounts need CAP_SYS_ADMIN in the new user namespace, so they come before the
// capabilities go; Landlock needs no_new_privs; seccomp comes last because the
// allowlist refuses the setup calls above.
void SetUpSandbox(const SandboxChildArgs& args) {
  const Plan& plan = *args.plan;
  if (args.cgroup_tasks_fds[0] >= 0) {
    // A namespace made now has the sandbox's own cgroup as its root.
    FailIfErrno(args, LaunchStep::kCgroupNamespace, unshare(CLONE_NEWCGROUP) != 0);
  }
  FailIf(args, BuildRootInChild(plan.mounts));
  FailIfErrno(args, LaunchStep::kHostname, sethostname(args.hostname, strlen(args.hostname)) != 0);
  if (args.own_network) {
    // A new network namespace starts with lo down; "loopback only" means lo works.
    int rc = base::sys::RawSetInterfaceUp("lo");
    if (rc < 0) Fail(args, {LaunchStep::kLoopback, -rc});
  }
  FailIf(args, ApplyRlimitsInChild(plan.rlimits));
  FailIfErrno(args, LaunchStep::kWorkdir, chdir(args.workdir) != 0);
  FailIf(args, SetIdsInChild(plan.identity));
  // A new session: the sandbox has no controlling terminal to push input into.
  FailIfErrno(args, LaunchStep::kSession, setsid() < 0);
  FailIf(args, DropPrivilegesInChild());
  FailIf(args, ApplyLandlockInChild(plan.landlock));
  FailIf(args, InstallSeccompInChild(plan.seccomp));
}

[[noreturn]] void ExecCommand(const SandboxChildArgs& args, int exec_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Ignored signals survive execve; the command starts with every default.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &default_action, nullptr);
  }
  // Only 0, 1, 2 and the inherited fds (as 3, 4, ...) cross into the command. Each is
  // first copied above every low number, so that placing one never overwrites another
  // (or the exec pipe) that happens to sit at its target number.
  exec_fd = fcntl(exec_fd, F_DUPFD_CLOEXEC, 64);
  int moved_stdio[3];
  for (int i = 0; i < 3; ++i) {
    moved_stdio[i] = args.stdio_fds[i] >= 0 ? fcntl(args.stdio_fds[i], F_DUPFD_CLOEXEC, 64) : -1;
  }
  int moved[kMaxInheritedFds];
  int inherited = 0;
  for (const int* fd = args.inherit_fds; *fd >= 0 && inherited < kMaxInheritedFds; ++fd) {
    moved[inherited++] = fcntl(*fd, F_DUPFD_CLOEXEC, 64);
  }
  for (int i = 0; i < 3; ++i) {
    if (moved_stdio[i] >= 0) dup2(moved_stdio[i], i);
  }
  for (int i = 0; i < inherited; ++i) {
    if (moved[i] < 0 || dup2(moved[i], 3 + i) < 0) {
      int err = errno;
      while (write(exec_fd, &err, sizeof(err)) < 0 && errno == EINTR) {
      }
      _exit(127);
    }
  }
  base::sys::RawCloseRangeCloexec(static_cast<unsigned>(3 + inherited));
  int err = ENOENT;
  for (const char* const* path = args.candidates; *path != nullptr; ++path) {
    execve(*path, args.argv, args.envp);
    // execvp(3)'s rule: keep looking past ENOENT/ENOTDIR, remember EACCES.
    if (errno == EACCES) {
      err = EACCES;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  while (write(exec_fd, &err, sizeof(err)) < 0 && errno == EINTR) {
  }
  _exit(127);
}

// Waits for the exec pipe to close (exec worked) or carry an errno (it did not).
void ReportExec(const SandboxChildArgs& args, int exec_read_fd) {
  int err = 0;
  ssize_t n;
  do {
    n = read(exec_read_fd, &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  close(exec_read_fd);
  if (n == sizeof(err)) {
    base::WriteChildRecord(args.report_fd, ChildRecordKind::kExecFailed, 0, err, 0);
  } else {
    base::WriteChildRecord(args.report_fd, ChildRecordKind::kExecStarted, 0, 0, 0);
  }
}

// The init's loop: reap everything, forward signals to the command, report the
// command's status and exit, which kills whatever the command left behind.
[[noreturn]] void SuperviseCommand(const SandboxChildArgs& args, pid_t command) {
  sigset_t waited;
  ForwardedSignals(&waited);
  sigaddset(&waited, SIGCHLD);
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&waited, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      kill(command, sig);
      continue;
    }
    int status;
    pid_t pid;
    while ((pid = wait4(-1, &status, WNOHANG, nullptr)) > 0) {
      if (pid == command) {
        base::WriteChildRecord(args.report_fd, ChildRecordKind::kExited, 0, 0, status);
        _exit(0);
      }
    }
  }
}

}  // namespace

void ForwardedSignals(sigset_t* set) {
  sigemptyset(set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH}) {
    sigaddset(set, sig);
  }
}

void RunSandboxChild(const SandboxChildArgs& args) {
  // The parent's ends: holding the go pipe's write end would keep the read below
  // from seeing EOF if the parent died.
  for (const int* fd = args.close_fds; *fd >= 0; ++fd) close(*fd);
  // If zygo dies, so does the sandbox: pid 1's death ends its pid namespace.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(args, {LaunchStep::kDeathSignal, errno});
  char go = 0;
  ssize_t n;
  do {
    n = read(args.go_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  // No byte: the parent died or gave up on this sandbox before it was ready.
  if (n != 1) _exit(125);
  close(args.go_fd);
  JoinCgroupsV1(args);

  SetUpSandbox(args);

  sigset_t blocked;
  ForwardedSignals(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, nullptr);
  int exec_pipe[2];
  FailIfErrno(args, LaunchStep::kExecPipe, pipe2(exec_pipe, O_CLOEXEC) != 0);
  long pid = syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0);
  FailIfErrno(args, LaunchStep::kForkCommand, pid < 0);
  if (pid == 0) {
    close(exec_pipe[0]);
    ExecCommand(args, exec_pipe[1]);
  }
  close(exec_pipe[1]);
  // The init keeps no fd but its report and exec pipes: a copy of an inherited socket, or
  // of any other fd the (multi-threaded) parent had open at clone, would hide the
  // command's exit from that fd's peer.
  unsigned low = static_cast<unsigned>(std::min(args.report_fd, exec_pipe[0]));
  unsigned high = static_cast<unsigned>(std::max(args.report_fd, exec_pipe[0]));
  if (low > 3) base::sys::RawCloseRange(3, low - 1);
  if (high > low + 1) base::sys::RawCloseRange(low + 1, high - 1);
  base::sys::RawCloseRange(high + 1, ~0U);
  ReportExec(args, exec_pipe[0]);
  SuperviseCommand(args, static_cast<pid_t>(pid));
}

}  // namespace zygo::core
