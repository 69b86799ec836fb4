// The seccomp allowlist every sandbox runs under. Built with libseccomp in the
// parent (which allocates); installed in the child from the exported BPF.
#ifndef ZYGO_CORE_SECCOMP_POLICY_H_
#define ZYGO_CORE_SECCOMP_POLICY_H_

#include <linux/filter.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/child_failure.h"

namespace zygo::core {

struct SeccompPrograms {
  // The allowlist: anything not named is refused with EPERM; clone3 gets ENOSYS so libc
  // falls back to clone, whose namespace flags are refused (seccomp_argument_rules.h). A
  // call from a foreign ABI (i386, x32) goes to the filter's listener, zygo-init, which
  // kills the process and reports the call (core/init/seccomp_listener.h).
  std::vector<struct sock_filter> allowlist;
  // The same, for a task whose filters already have a listener (zygo itself under a
  // container's seccomp agent): the kernel allows one, so a foreign ABI is killed by the
  // kernel, and reported only as SIGSYS.
  std::vector<struct sock_filter> allowlist_without_listener;
  // The same, but every refused call also goes to the listener, which answers EPERM and
  // counts it by name (zygo run --explain-denials).
  std::vector<struct sock_filter> explaining_allowlist;
  // Argument checks a 64-bit compare would miss: ioctl(TIOCSTI/TIOCLINUX) matched on
  // the low 32 bits, which is all the kernel reads of the request number.
  std::vector<struct sock_filter> argument_denials;
  int allowed_syscalls = 0;  // for --dry-run
  std::vector<std::string> denied_examples;
};

// Which sandbox the programs are for.
enum class SeccompProfile {
  kSandbox,  // zygo run's, and a warm function's zygote's
  // A runtime zygote's (Spec::function_zygotes > 0), whose agent forks function zygotes
  // (core/forked_zygote.h). Its allowlist also lets through exactly
  // unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
  // CLONE_NEWUTS) and unshare(CLONE_NEWCGROUP) (the flags' low 32 bits compared equal, as
  // for a spare's pair: the kernel refuses any upper bit with EINVAL); nothing else differs. Each
  // function zygote stacks BuildFunctionZygoteSealFilter() on it before its tenant's code runs.
  kRuntimeZygote,
};

// Parent side. Fails only if libseccomp does.
absl::StatusOr<SeccompPrograms> BuildSeccompPrograms(
    SeccompProfile profile = SeccompProfile::kSandbox);

// The filter a function zygote stacks on itself (over the runtime zygote's allowlist)
// before any tenant code runs, so that what the two allow together is exactly kSandbox's
// allowlist again: unshare is refused with EPERM unless its whole 64-bit argument is
// CLONE_NEWUSER | CLONE_NEWNS (a warm spare's own /tmp); everything else is allowed here
// and left to the filter below. A foreign ABI's call (i386, x32) is allowed here too, so
// that the runtime's allowlist, whose listener is zygo-init, still answers it.
// Parent side. Fails only if libseccomp does.
absl::StatusOr<std::vector<struct sock_filter>> BuildFunctionZygoteSealFilter();

// A program as the bytes of its sock_filter array, for a process that cannot link
// libseccomp (the Python agent): it installs them as a struct sock_fprog of
// size / sizeof(struct sock_filter) instructions, with seccomp(SECCOMP_SET_MODE_FILTER)
// (core/base/sys/seccomp.h RawSeccompSetFilter; TSYNC is not needed in a single thread),
// after PR_SET_NO_NEW_PRIVS or with CAP_SYS_ADMIN. Native byte order.
std::string SeccompProgramBytes(const std::vector<struct sock_filter>& program);

// The name of syscall `nr` of the ABI `arch` (an AUDIT_ARCH_* value), or "syscall N".
std::string SyscallName(uint32_t arch, int nr);

// "i386", "x32", "x86_64", or the AUDIT_ARCH value in hex.
std::string ArchName(uint32_t arch, int nr);

// Child side: installs the argument denials and an allowlist: the explaining one when
// `explain`, else the one with a listener, or, if the kernel refuses a second listener
// (EBUSY), the one without. Sets `*listener_fd` to the listener (CLOEXEC) or -1. Needs
// no_new_privs (or CAP_SYS_ADMIN).
ChildFailure InstallSeccompInChild(const SeccompPrograms& programs, bool explain, int* listener_fd);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SECCOMP_POLICY_H_
