// The seccomp allowlist every sandbox runs under. Built with libseccomp in the
// parent (which allocates); installed in the child from the exported BPF.
#ifndef ZYGO_CORE_SECCOMP_POLICY_H_
#define ZYGO_CORE_SECCOMP_POLICY_H_

#include <linux/filter.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/child_failure.h"

namespace zygo::core {

struct SeccompPrograms {
  // The allowlist: anything not named is refused with EPERM; clone3 gets ENOSYS so libc
  // falls back to clone, whose namespace flags are refused; foreign ABIs (i386, x32)
  // kill the process.
  std::vector<struct sock_filter> allowlist;
  // Argument checks a 64-bit compare would miss: ioctl(TIOCSTI/TIOCLINUX) matched on
  // the low 32 bits, which is all the kernel reads of the request number.
  std::vector<struct sock_filter> argument_denials;
  int allowed_syscalls = 0;  // for --dry-run
  std::vector<std::string> denied_examples;
};

// Parent side. Fails only if libseccomp does.
absl::StatusOr<SeccompPrograms> BuildSeccompPrograms();

// Child side: installs both programs. Needs no_new_privs (or CAP_SYS_ADMIN).
ChildFailure InstallSeccompInChild(const SeccompPrograms& programs);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SECCOMP_POLICY_H_
