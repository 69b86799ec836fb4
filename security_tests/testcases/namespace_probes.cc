// Escape probe subcommands (escape_probe.cc): new namespaces and joining others.
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

// ---------------------------------------------------------------------------------------------
// Namespaces. Host control as root: all allowed.

int UnshareInChild(long flag) { return unshare(static_cast<int>(flag)) == 0 ? 0 : errno; }

Outcome ProbeUnshareUser(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWUSER); }
Outcome ProbeUnshareMount(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWNS); }
Outcome ProbeUnshareNet(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWNET); }
Outcome ProbeUnsharePid(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWPID); }
Outcome ProbeUnshareCgroup(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWCGROUP); }
Outcome ProbeUnshareIpc(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWIPC); }
Outcome ProbeUnshareUts(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWUTS); }
// The one pair seccomp lets through, for a warm spare's own /tmp; elsewhere the sandbox's
// max_user_namespaces (0) refuses it.
Outcome ProbeUnshareUserMount(const Args&) {
  return RunInChild(UnshareInChild, CLONE_NEWUSER | CLONE_NEWNS);
}

// Raw clone (x86_64 order: flags, stack, parent_tid, child_tid, tls); stack 0 = fork-style.
Outcome ProbeCloneNewuser(const Args&) {
  return ReapRawClone(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}

Outcome Clone3(uint64_t flags) {
  clone_args args{};
  args.flags = flags;
  args.exit_signal = SIGCHLD;
  return ReapRawClone(syscall(SYS_clone3, &args, sizeof args));
}

// The sandbox's seccomp is expected to answer clone3 with ENOSYS (its flags live in memory a
// filter cannot read), so libc falls back to clone. Host control as root: both allowed.
Outcome ProbeClone3Newuser(const Args&) { return Clone3(CLONE_NEWUSER); }
Outcome ProbeClone3Plain(const Args&) { return Clone3(0); }

int SetnsInChild(long fd) { return setns(static_cast<int>(fd), 0) == 0 ? 0 : errno; }

// Host control as root: allowed for /proc/1/ns/* (joining the namespace it is already in).
Outcome ProbeSetns(const Args& args) {
  int fd = open(args[0].c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return DeniedAt("open", errno);
  Outcome out = RunInChild(SetnsInChild, fd);
  close(fd);
  return out;
}

constexpr ProbeSpec kProbes[] = {
    {"unshare-user", "", 0, 0, "unshare(CLONE_NEWUSER) in a child", ProbeUnshareUser},
    {"unshare-mount", "", 0, 0, "unshare(CLONE_NEWNS) in a child", ProbeUnshareMount},
    {"unshare-user-mount", "", 0, 0, "unshare(CLONE_NEWUSER | CLONE_NEWNS) in a child",
     ProbeUnshareUserMount},
    {"unshare-net", "", 0, 0, "unshare(CLONE_NEWNET) in a child", ProbeUnshareNet},
    {"unshare-pid", "", 0, 0, "unshare(CLONE_NEWPID) in a child", ProbeUnsharePid},
    {"unshare-cgroup", "", 0, 0, "unshare(CLONE_NEWCGROUP) in a child", ProbeUnshareCgroup},
    {"unshare-ipc", "", 0, 0, "unshare(CLONE_NEWIPC) in a child", ProbeUnshareIpc},
    {"unshare-uts", "", 0, 0, "unshare(CLONE_NEWUTS) in a child", ProbeUnshareUts},
    {"clone-newuser", "", 0, 0, "raw clone(CLONE_NEWUSER)", ProbeCloneNewuser},
    {"clone3-newuser", "", 0, 0, "raw clone3(CLONE_NEWUSER)", ProbeClone3Newuser},
    {"clone3-plain", "", 0, 0, "raw clone3 without namespace flags", ProbeClone3Plain},
    {"setns", "NSPATH", 1, 1, "open NSPATH and setns() in a child", ProbeSetns},
};

}  // namespace

std::span<const ProbeSpec> NamespaceProbes() { return kProbes; }

}  // namespace zygo::security_tests
