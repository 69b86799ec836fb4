#include "core/sandbox_child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/base/child_report.h"
#include "core/base/sys/netdevice.h"
#include "core/base/sys/process.h"
#include "core/identity.h"
#include "core/init/init_layout.h"
#include "core/landlock.h"
#include "core/mounts.h"
#include "core/rlimits.h"
#include "core/seccomp_policy.h"
#include "core/userns_limits.h"

namespace zygo::core {
namespace {

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

// Everything between clone and zygo-init, in the order that works: mounts need
// CAP_SYS_ADMIN in the new user namespace, so they come before the capabilities go;
// Landlock needs no_new_privs; seccomp comes last because the allowlist refuses the
// setup calls above. Returns the seccomp listener, or -1.
int SetUpSandbox(const SandboxChildArgs& args) {
  const Plan& plan = *args.plan;
  // First: the host's /proc is still this process's /proc.
  FailIf(args, ApplyUsernsLimitsInChild(plan.userns_limits));
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
  FailIf(args, DropBoundingSetInChild());
  FailIf(args, SetIdsInChild(plan.identity));
  // A new session: the sandbox has no controlling terminal to push input into.
  FailIfErrno(args, LaunchStep::kSession, setsid() < 0);
  FailIf(args, DropPrivilegesInChild());
  FailIf(args, ApplyLandlockInChild(plan.landlock));
  int listener = -1;
  FailIf(args, InstallSeccompInChild(plan.seccomp, args.explain_denials, &listener));
  return listener;
}

// Puts every fd zygo-init starts with at its place (core/init/init_layout.h) and marks
// everything else close-on-exec, so only those cross into the init. Each source is first
// copied above every low number, so that placing one never overwrites another that
// happens to sit at its target. Returns the report fd to use until the exec.
int PlaceInitFds(const SandboxChildArgs& args, int listener, int* init_fd) {
  constexpr int kCopies = 64;
  struct Placement {
    int source;
    int target;
  } placements[3 + init::kMaxInheritedFds + 2];
  int count = 0;
  for (int i = 0; i < 3; ++i) {
    if (args.stdio_fds[i] >= 0) placements[count++] = {args.stdio_fds[i], i};
  }
  int inherited = 0;
  for (const int* fd = args.inherit_fds; *fd >= 0 && inherited < init::kMaxInheritedFds; ++fd) {
    placements[count++] = {*fd, init::kFirstInheritedFd + inherited++};
  }
  placements[count++] = {args.report_fd, init::ReportFd(inherited)};
  if (listener >= 0) placements[count++] = {listener, init::ListenerFd(inherited)};
  *init_fd = fcntl(*init_fd, F_DUPFD_CLOEXEC, kCopies);
  int report = fcntl(args.report_fd, F_DUPFD_CLOEXEC, kCopies);
  if (*init_fd < 0 || report < 0) Fail(args, {LaunchStep::kInitFds, errno});
  for (int i = 0; i < count; ++i) {
    placements[i].source = fcntl(placements[i].source, F_DUPFD_CLOEXEC, kCopies);
    if (placements[i].source < 0)
      base::FailChildStep(report, static_cast<int>(LaunchStep::kInitFds), errno, i);
  }
  for (int i = 0; i < count; ++i) {
    if (dup2(placements[i].source, placements[i].target) < 0) {
      base::FailChildStep(report, static_cast<int>(LaunchStep::kInitFds), errno, i);
    }
  }
  int last = listener >= 0 ? init::ListenerFd(inherited) : init::ReportFd(inherited);
  int rc = base::sys::RawCloseRangeCloexec(static_cast<unsigned>(last + 1));
  if (rc < 0) base::FailChildStep(report, static_cast<int>(LaunchStep::kInitFds), -rc);
  return report;
}

}  // namespace

void ForwardedSignals(sigset_t* set) {
  sigemptyset(set);
  for (int sig : init::kForwardedSignals) sigaddset(set, sig);
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

  int listener = SetUpSandbox(args);
  int init_fd = args.init_fd;
  int report = PlaceInitFds(args, listener, &init_fd);
  // The last step of this copy of the parent: from here on pid 1 is zygo-init, whose
  // memory holds nothing of the parent's. PR_SET_PDEATHSIG survives the exec.
  int rc = base::sys::RawExecveat(init_fd, args.init_argv, args.envp);
  base::FailChildStep(report, static_cast<int>(LaunchStep::kExecInit), -rc);
}

}  // namespace zygo::core
