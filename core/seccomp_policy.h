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

// Parent side. Fails only if libseccomp does.
absl::StatusOr<SeccompPrograms> BuildSeccompPrograms();

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
