// The allowlist's rules that read a call's arguments: which clone flags, socket families,
// file modes and device types a sandbox may ask for, and the calls refused with ENOSYS so
// that libc and runtimes fall back as they do on kernels without them. Part of the seccomp
// facility (seccomp_policy.h); parent side, with libseccomp.
#ifndef ZYGO_CORE_SECCOMP_ARGUMENT_RULES_H_
#define ZYGO_CORE_SECCOMP_ARGUMENT_RULES_H_

#include <seccomp.h>

#include "absl/status/status.h"
#include "core/seccomp_policy.h"

namespace zygo::core {

// Adds the rules to `ctx`, whose default action refuses everything else, and counts the
// syscalls they allow (in part) into `allowed`. Opens exactly:
//   clone without namespace flags; clone3 -> ENOSYS (its flags are in memory a filter
//     cannot read; libc falls back to clone);
//   unshare(CLONE_NEWUSER | CLONE_NEWNS) (a warm spare's own /tmp), and for
//     SeccompProfile::kRuntimeZygote also unshare(CLONE_NEWUSER | CLONE_NEWNS |
//     CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) and
//     unshare(CLONE_NEWCGROUP) (a function zygote's own namespaces);
//   chmod, fchmod, fchmodat, fchmodat2 without S_ISUID or S_ISGID in the mode: no setuid
//     or setgid file is made through a volume, where the sandbox's root may be the host's;
//   mknod, mknodat of regular files, FIFOs and sockets, never devices;
//   socket of AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK with NETLINK_ROUTE only (what
//     getaddrinfo and `ip` use); socketpair of AF_UNIX: no AF_VSOCK (the hypervisor's
//     port space), AF_PACKET, AF_ALG, AF_XDP, Bluetooth or other kernel surfaces;
//   the native AIO calls -> ENOSYS, as on a kernel built without AIO: their event budget
//     (fs.aio-max-nr) is one for the whole host, and a sandbox could take all of it.
absl::Status AddArgumentCheckedRules(scmp_filter_ctx ctx, SeccompProfile profile, int* allowed);

}  // namespace zygo::core

#endif  // ZYGO_CORE_SECCOMP_ARGUMENT_RULES_H_
